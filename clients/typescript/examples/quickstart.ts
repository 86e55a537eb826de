import { RecallmeshClient } from "@recallmesh/client";

// the HTTP/JSON API `make run` serves, with the key from RECALLMESH_API_KEY
const memory = new RecallmeshClient({
  baseUrl: process.env.RECALLMESH_HTTP_URL ?? "http://localhost:8081",
  namespace: process.env.RECALLMESH_NAMESPACE ?? "ts-quickstart",
});

const stored = await memory.store("Maya's manager Tomás Ribeiro is away until March", {
  category: "fact", tags: ["people"], waitIndexed: true,
});
console.log("stored", stored.memory?.id);

const result = await memory.recall("who is Maya's manager?", { k: 3 });
for (const hit of result.hits) {
  console.log(hit.score.toFixed(3), hit.memory?.content);
}

const page = await memory.list({ pageSize: 10 });
console.log("listed", page.memories.length, "memories");

await memory.delete(stored.memory!.id);
console.log("deleted", stored.memory?.id, "-", await memory.count(), "left");
