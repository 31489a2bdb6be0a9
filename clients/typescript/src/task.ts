// Runs one task against e rpc, as the client-side conformance kit expects
// (spec/conformance.md, "Client conformance"): spawn $E_RPC, hello with
// ask:true, session.create (in the task's cwd when given), session.prompt,
// answer each ask with the task's result for its method, serve the task's
// client_tools with its tool_results (by tool name), print the turn's
// final_output as the last stdout line and exit 0; on a failed turn or
// request print the error on stderr and exit 1.
//
//   E_RPC="e rpc" E_TASK='{"prompt":"/text hi","cwd":null,"asks":{}}' node dist/src/task.js

import { Client, RPCError, type ClientTool } from "./index.js";

interface Task {
  prompt: string;
  cwd?: string | null;
  asks?: Record<string, unknown>;
  client_tools?: ClientTool[];
  tool_results?: Record<string, string>;
}

async function main(): Promise<number> {
  const task = JSON.parse(process.env.E_TASK ?? "{}") as Task;
  const client = new Client({ onAsk: (ask) => task.asks?.[ask.method] });
  try {
    await client.hello(true);
    const tools = (task.client_tools ?? []).map((t) =>
      client.registerTool(t.name, () => task.tool_results?.[t.name] ?? "", {
        description: t.description ?? undefined,
        parameters: t.parameters ?? undefined,
      }),
    );
    const session = await client.createSession({
      cwd: task.cwd ?? undefined,
      client_tools: tools.length > 0 ? tools : undefined,
    });
    const result = await session.run(task.prompt);
    if (result.error !== null) {
      process.stderr.write(`e: turn failed: ${result.error}\n`);
      return 1;
    }
    process.stdout.write(result.final_output + "\n");
    return 0;
  } catch (err) {
    if (!(err instanceof RPCError)) throw err;
    process.stderr.write(`e: ${err.method}: ${err.message}${err.code ? ` [${err.code}]` : ""}\n`);
    return 1;
  } finally {
    client.kill(); // close() would wait for the server; the task is done
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`e: ${err}\n`);
    process.exit(1);
  },
);
