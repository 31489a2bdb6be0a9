// Drives `e acp` with the official ACP TypeScript SDK (@agentclientprotocol/sdk):
// initialize, a text prompt, a permission request answered allow and one answered
// reject, and a cancel mid-turn. Prints one JSON line of what it saw; exits 1 on
// any protocol error the SDK raises.
//
//   node sdkclient.mjs E_BINARY CWD
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

const [exe, cwd] = process.argv.slice(2);
const child = spawn(exe, ["acp", "--ne"], { cwd, stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const seen = { updates: [], permissions: [], text: {} };
const answers = [];
let onChunk = null;
const app = acp
  .client({ name: "e-sdk-test" })
  .onRequest("session/request_permission", async ({ params }) => {
    seen.permissions.push({ toolCallId: params.toolCall.toolCallId, options: params.options.map((o) => o.kind) });
    return { outcome: { outcome: "selected", optionId: answers.shift() } };
  })
  .onNotification("session/update", async ({ params }) => {
    const u = params.update;
    seen.updates.push(u.sessionUpdate);
    if (u.sessionUpdate === "agent_message_chunk") {
      seen.text[params.sessionId] = (seen.text[params.sessionId] || "") + u.content.text;
      if (onChunk) onChunk();
    }
    if (u.sessionUpdate === "tool_call_update" && u.status) seen.updates.push(u.toolCallId + ":" + u.status);
  });

const result = await app.connectWith(stream, async (agent) => {
  const init = await agent.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await agent.request("session/new", { cwd, mcpServers: [] });
  const prompt = (text) => agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

  const hello = await prompt("/text hello from the sdk");
  answers.push("allow");
  const allowed = await prompt('/tool write {"path":"sdk.txt","content":"ok"}\n/then\n/text written');
  answers.push("reject");
  const rejected = await prompt('/tool bash {"command":"touch rejected"}\n/then\n/text not run');

  const chunked = new Promise((resolve) => { onChunk = resolve; });
  const long = prompt("/delay 200\n/long 100");
  await chunked;
  onChunk = null;
  await agent.notify("session/cancel", { sessionId });
  const cancelled = await long;
  return {
    protocolVersion: init.protocolVersion,
    stopReasons: [hello.stopReason, allowed.stopReason, rejected.stopReason, cancelled.stopReason],
  };
});
child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", resolve));
console.log(JSON.stringify({ ...result, ...seen, exitCode: code }));
