import { Client } from "@e-agent/client";

const e = new Client({ command: ["e", "rpc"] });
await e.hello();
const session = await e.createSession();
const turn = session.prompt("/text hello from typescript");
for await (const event of turn) if (event.type === "text") console.log(event.delta);
console.log((await turn.result()).final_output);
await e.close();
