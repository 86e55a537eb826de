// The client against the real stack: the HTTP/JSON API at RECALLMESH_HTTP_URL with the key
// RECALLMESH_API_KEY, in the fresh namespace RECALLMESH_NAMESPACE
// (tests/integration/test_typescript_client.py starts them and runs `npm test`).
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { Code, ConnectError, RecallmeshClient, retrying } from "../index.js";

const namespace = process.env.RECALLMESH_NAMESPACE ?? "";
const client = new RecallmeshClient({ namespace });

async function refused(call: Promise<unknown>, code: Code): Promise<ConnectError> {
  try {
    await call;
  } catch (e) {
    const error = ConnectError.from(e);
    assert.equal(error.code, code, `${Code[error.code]}: ${error.rawMessage}`);
    return error;
  }
  assert.fail(`expected ${Code[code]}`);
}

test("store, recall, list, count, get and delete through the real stack", async () => {
  const stored = await client.store("The boat is moored at pier 7", {
    category: "fact", tags: ["boat", "harbour"], metadata: { source: "ts" }, waitIndexed: true,
  });
  const id = stored.memory!.id;
  assert.match(id, /^[0-9a-f-]{36}$/);
  assert.equal(stored.indexed, true);
  const recalled = await client.recall("where is the boat kept?", { k: 3, explain: true });
  assert.equal(recalled.hits[0].memory?.id, id);
  assert.ok(recalled.hits[0].score > 0);
  assert.ok(recalled.legs.some((leg) => leg.leg === "vector"));
  const page = await client.list({ filters: { metadata: { source: "ts" } }, pageSize: 5 });
  assert.deepEqual(page.memories.map((m) => m.id), [id]);
  assert.equal(await client.count({ filters: { tags: ["harbour"] } }), 1);
  assert.equal((await client.get(id))?.content, "The boat is moored at pier 7");
  const context = await client.context("where is the boat kept?");
  assert.match(context.text, /pier 7/);
  await client.delete(id);
  await refused(client.get(id), Code.NotFound);
});

test("a retried store is the same write: the client gives the memory its id", async () => {
  const id = randomUUID();
  const sent = { id, tags: ["once"] };
  const first = await client.store("Written once, however often it is sent", sent);
  const again = await client.store("Written once, however often it is sent", sent);
  assert.equal(first.memory?.id, id);
  assert.deepEqual(again.memory, first.memory);  // the same memory, not a second one
  assert.equal(await client.count({ filters: { tags: ["once"] } }), 1);
  await client.delete(id, { purge: true });
});

test("pages follow their token", async () => {
  for (const n of [1, 2, 3]) await client.store(`page note ${n}`, { tags: ["pages"] });
  const first = await client.list({ pageSize: 2, filters: { tags: ["pages"] } });
  assert.equal(first.memories.length, 2);
  assert.ok(first.nextPageToken);
  const second = await client.list({ pageSize: 2, pageToken: first.nextPageToken,
    filters: { tags: ["pages"] } });
  assert.equal(second.memories.length, 1);
  assert.equal(second.nextPageToken, "");
});

test("refusals keep the gateway's code and message", async () => {
  const blank = await refused(client.recall(" "), Code.InvalidArgument);
  assert.match(blank.rawMessage, /query must not be empty/);
  const stranger = new RecallmeshClient({ namespace, apiKey: "rmk_notakey_0123456789" });
  await refused(stranger.recall("anything"), Code.Unauthenticated);
  await refused(new RecallmeshClient({ apiKey: "x" }).recall("no namespace"),
    Code.InvalidArgument);
});

test("a deadline ends the call", async () => {
  await refused(client.recall("where is the boat kept?", { timeoutMs: 1 }),
    Code.DeadlineExceeded);
});

test("a gateway that is not there is tried again, then UNAVAILABLE", async () => {
  const nowhere = new RecallmeshClient({ baseUrl: "http://127.0.0.1:9", namespace,
    retry: { maxAttempts: 3, initialBackoffMs: 20 } });
  const started = Date.now();
  await refused(nowhere.count(), Code.Unavailable);
  assert.ok(Date.now() - started >= 20, "no backoff between the tries");
});

test("the retry policy: which codes, how often, never past the deadline", async () => {
  let calls = 0;
  const failing = (code: Code) => async () => {
    calls++;
    throw new ConnectError("no", code);
  };
  // backoffs of 10 to 20 ms, then 20 to 40 ms (jittered between half and all of it)
  const policy = { maxAttempts: 3, initialBackoffMs: 20, maxBackoffMs: 40,
    codes: [Code.Unavailable] };
  const request = (timeoutMs: string) => ({ header: new Headers(timeoutMs ?
    { "connect-timeout-ms": timeoutMs } : {}), signal: new AbortController().signal });
  const run = (code: Code, timeoutMs = "") =>
    retrying(policy)(failing(code) as never)(request(timeoutMs) as never);
  await assert.rejects(run(Code.Unavailable));
  assert.equal(calls, 3);
  calls = 0;
  await assert.rejects(run(Code.InvalidArgument));
  assert.equal(calls, 1);
  calls = 0;
  await assert.rejects(run(Code.Unavailable, "5"));  // 5 ms left: no room for a 10 ms backoff
  assert.equal(calls, 1);
});
