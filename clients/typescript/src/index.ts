/**
 * recallmesh's typed TypeScript client: every MemoryService RPC over the HTTP/JSON API
 * (docs/http.md), which speaks the Connect protocol, through connect-es; the messages and
 * the service are generated from the protos (src/gen, `npm run generate`).
 *
 * Like the Python client (recallmesh.client): an API key on every call, a deadline on every
 * call, retries of UNAVAILABLE and RESOURCE_EXHAUSTED with a jittered exponential backoff
 * that never outlives the deadline, and every new memory given its id here so that a retried
 * write is the same write (the id is the write's idempotency key).
 */

import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  Code,
  ConnectError,
  createClient,
  type Client,
  type Interceptor,
} from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { randomUUID } from "node:crypto";

import {
  type ContextResponse,
  type CountResponse,
  type DeleteResponse,
  type ListResponse,
  type Memory,
  MemoryService,
  type RecallFilters,
  RecallFiltersSchema,
  type RecallResponse,
  RelationType,
  SortBy,
  type StoreResponse,
} from "./gen/recallmesh/v1/memory_pb.js";

export * from "./gen/recallmesh/v1/memory_pb.js";
export { Code, ConnectError };

/** How a failed call is tried again (the Python client's RetryPolicy). */
export interface RetryPolicy {
  /** Tries in all, the first included (1: no retry). */
  maxAttempts: number;
  initialBackoffMs: number;
  maxBackoffMs: number;
  /** The codes worth another try: the gateway was down or shed the call. */
  codes: Code[];
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 4,
  initialBackoffMs: 100,
  maxBackoffMs: 2000,
  codes: [Code.Unavailable, Code.ResourceExhausted],
};

export interface ClientOptions {
  /** The HTTP/JSON API: RECALLMESH_HTTP_URL, else http://localhost:8081. */
  baseUrl?: string;
  /** An API key or JWT: RECALLMESH_API_KEY. */
  apiKey?: string;
  /** The namespace of calls that name none. */
  namespace?: string;
  /** Each call's deadline in ms (default 10000); a call may pass its own. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
}

/** A memory's fields as `store` takes them (all but the content optional). */
export interface NewMemory {
  category?: string;
  tags?: string[];
  importance?: number;
  metadata?: Record<string, string>;
  sensitive?: boolean;
  thread?: string;
  /** Ids of memories this one replaces (they end where it starts). */
  supersedes?: string[];
  /** Its id; a fresh UUID when not given (the write's idempotency key). */
  id?: string;
  createdAt?: Date;
  expiresAt?: Date;
}

/** The filter grammar (docs/api.md "Filters"); times as Dates. */
export interface Filters {
  categories?: string[];
  tags?: string[];
  tagsAll?: string[];
  tagsNone?: string[];
  threads?: string[];
  metadata?: Record<string, string | string[]>;
  importanceMin?: number;
  importanceMax?: number;
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  updatedBefore?: Date;
  asOf?: Date;
}

interface CallOptions {
  namespace?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/** Retries with a jittered exponential backoff, never past the call's deadline. */
export function retrying(policy: RetryPolicy): Interceptor {
  return (next) => async (req) => {
    const started = Date.now();
    const timeoutMs = Number(req.header.get("connect-timeout-ms") ?? "0");
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(req);
      } catch (e) {
        const error = ConnectError.from(e);
        const backoff = Math.min(policy.maxBackoffMs,
          policy.initialBackoffMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2);
        const left = timeoutMs > 0 ? timeoutMs - (Date.now() - started) : Infinity;
        if (attempt >= policy.maxAttempts || !policy.codes.includes(error.code)
            || req.signal.aborted || backoff >= left) {
          throw error;
        }
        await sleep(backoff, req.signal);
      }
    }
  };
}

function filtersMessage(filters?: Filters): RecallFilters | undefined {
  if (!filters) return undefined;
  const when = (d?: Date) => (d ? timestampFromDate(d) : undefined);
  return create(RecallFiltersSchema, {
    categories: filters.categories ?? [],
    tags: filters.tags ?? [],
    tagsAll: filters.tagsAll ?? [],
    tagsNone: filters.tagsNone ?? [],
    threads: filters.threads ?? [],
    metadata: Object.entries(filters.metadata ?? {}).map(([key, value]) => ({
      key, values: Array.isArray(value) ? value : [value],
    })),
    importanceMin: filters.importanceMin,
    importanceMax: filters.importanceMax,
    createdAfter: when(filters.createdAfter),
    createdBefore: when(filters.createdBefore),
    updatedAfter: when(filters.updatedAfter),
    updatedBefore: when(filters.updatedBefore),
    asOf: when(filters.asOf),
  });
}

export class RecallmeshClient {
  /** Every MemoryService RPC as generated (for what the methods below do not cover). */
  readonly raw: Client<typeof MemoryService>;
  readonly namespace: string;
  private readonly timeoutMs: number;

  constructor(options: ClientOptions = {}) {
    const apiKey = options.apiKey ?? process.env.RECALLMESH_API_KEY ?? "";
    const auth: Interceptor = (next) => (req) => {
      if (apiKey) req.header.set("Authorization", `Bearer ${apiKey}`);
      return next(req);
    };
    const transport = createConnectTransport({
      baseUrl: options.baseUrl ?? process.env.RECALLMESH_HTTP_URL ?? "http://localhost:8081",
      httpVersion: "1.1",
      useBinaryFormat: false,
      interceptors: [retrying({ ...DEFAULT_RETRY, ...options.retry }), auth],
    });
    this.raw = createClient(MemoryService, transport);
    this.namespace = options.namespace ?? "";
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  private ns(options?: CallOptions): string {
    const namespace = options?.namespace ?? this.namespace;
    if (!namespace) throw new ConnectError("no namespace: give one to the client or the call",
      Code.InvalidArgument);
    return namespace;
  }

  private call(options?: CallOptions) {
    return { timeoutMs: options?.timeoutMs ?? this.timeoutMs, signal: options?.signal };
  }

  /** Store one memory; with `waitIndexed`, answer once it is searchable by meaning. */
  async store(content: string, memory: NewMemory & CallOptions & { waitIndexed?: boolean } = {},
  ): Promise<StoreResponse> {
    return this.raw.store({
      namespace: this.ns(memory),
      memory: {
        id: memory.id ?? randomUUID(),
        content,
        category: memory.category ?? "",
        tags: memory.tags ?? [],
        importance: memory.importance,
        metadata: memory.metadata ?? {},
        sensitive: memory.sensitive ?? false,
        thread: memory.thread ?? "",
        relations: (memory.supersedes ?? []).map((targetId) => ({
          type: RelationType.SUPERSEDES, targetId,
        })),
        createdAt: memory.createdAt ? timestampFromDate(memory.createdAt) : undefined,
        expiresAt: memory.expiresAt ? timestampFromDate(memory.expiresAt) : undefined,
      },
      indexWait: { wait: memory.waitIndexed ?? false },
    }, this.call(memory));
  }

  /** The memories most relevant to `query`, best first (none when nothing fits). */
  async recall(query: string, options: CallOptions & {
    k?: number; filters?: Filters; explain?: boolean; sortBy?: "relevance" | "recency" | "importance";
  } = {}): Promise<RecallResponse> {
    const sortBy = { relevance: SortBy.RELEVANCE, recency: SortBy.RECENCY,
      importance: SortBy.IMPORTANCE }[options.sortBy ?? "relevance"];
    return this.raw.recall({
      namespace: this.ns(options), query, k: options.k ?? 0, explain: options.explain ?? false,
      filters: filtersMessage(options.filters), sortBy,
    }, this.call(options));
  }

  /** The block of memories a prompt needs, within `maxTokens`. */
  async context(query: string, options: CallOptions & { maxTokens?: number; filters?: Filters } = {},
  ): Promise<ContextResponse> {
    return this.raw.context({
      namespace: this.ns(options), query, maxTokens: options.maxTokens ?? 0,
      filters: filtersMessage(options.filters),
    }, this.call(options));
  }

  async get(id: string, options: CallOptions = {}): Promise<Memory | undefined> {
    return (await this.raw.get({ namespace: this.ns(options), id }, this.call(options))).memory;
  }

  /** One page of the namespace's memories (newest first); `nextPageToken` asks for the next. */
  async list(options: CallOptions & { filters?: Filters; pageSize?: number; pageToken?: string } = {},
  ): Promise<ListResponse> {
    return this.raw.list({
      namespace: this.ns(options), filters: filtersMessage(options.filters),
      pageSize: options.pageSize ?? 0, pageToken: options.pageToken ?? "",
    }, this.call(options));
  }

  async count(options: CallOptions & { filters?: Filters } = {}): Promise<number> {
    const reply: CountResponse = await this.raw.count({
      namespace: this.ns(options), filters: filtersMessage(options.filters),
    }, this.call(options));
    return Number(reply.count);
  }

  /** Delete a memory (kept as deleted for its history), or with `purge` remove it. */
  async delete(id: string, options: CallOptions & { purge?: boolean } = {}): Promise<DeleteResponse> {
    return this.raw.delete({ namespace: this.ns(options), id, purge: options.purge ?? false },
      this.call(options));
  }
}
