// Tests of the client against the real e rpc (offline model). E_BIN names
// an e binary; otherwise one is built with go build.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { Client, RPCError, ServerExited, type Event } from "../src/index.js";

// Compiled into OUT/test/; the package is OUT's parent unless E_TS_PKG says.
const out = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = process.env.E_TS_PKG ?? resolve(out, "..");
const repo = resolve(pkg, "..", "..");

function eBin(): string {
  if (process.env.E_BIN) return process.env.E_BIN;
  const bin = join(mkdtempSync(join(tmpdir(), "e-client-ts-")), "e");
  execFileSync("go", ["build", "-o", bin, "./cmd/e"], { cwd: repo, stdio: "inherit" });
  process.env.E_BIN = bin;
  return bin;
}

function env(): NodeJS.ProcessEnv {
  return { ...process.env, E_HOME: mkdtempSync(join(tmpdir(), "e-home-")), OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "" };
}

function client(opts: ConstructorParameters<typeof Client>[0] = {}): Client {
  return new Client({ command: [eBin(), "rpc", "--ne"], cwd: mkdtempSync(join(tmpdir(), "e-cwd-")), env: env(), stderr: "ignore", ...opts });
}

test("a turn streams typed events, then its result", async () => {
  const e = client();
  const hello = await e.hello();
  assert.ok(hello.methods.includes("session.prompt"));
  const s = await e.createSession();
  const turn = s.prompt("/text hello world");
  const events: Event[] = [];
  for await (const ev of turn) events.push(ev);
  assert.equal(events[0]?.type, "turn_start");
  assert.equal(events.at(-1)?.type, "turn_end");
  const text = events.flatMap((ev) => (ev.type === "text" ? [ev.delta] : [])).join("");
  assert.equal(text, "hello world");
  const result = await turn.result();
  assert.equal(result.final_output, "hello world");
  assert.equal(result.error, null);
  await e.close();
});

test("output schema and budget (J1, J2, N1, N2)", async () => {
  const e = client();
  const s = await e.createSession();
  const schema = { type: "object", required: ["ok"], properties: { ok: { type: "boolean" } } };
  let result = await s.run("review", { output_schema: schema });
  assert.equal(result.stop_reason, "completed");
  assert.deepEqual(result.structured_output, { ok: false });
  result = await s.run('/tool bash {"command":"true"}\n/then\n/text never', { max_model_calls: 1 });
  assert.equal(result.stop_reason, "max_model_calls");
  assert.equal(result.structured_output, null);
  await e.close();
});

test("errors are RPCErrors carrying the code", async () => {
  const e = client();
  await assert.rejects(e.call("session.info", { session: "nope" }), (err: unknown) => {
    assert.ok(err instanceof RPCError);
    assert.equal(err.method, "session.info");
    assert.match(err.message, /nope/);
    const sent = (err.response as { code?: string }).code;
    if (sent !== undefined) assert.equal(err.code, sent); // once the server sends codes (11.5)
    return true;
  });
  await e.close();
});

test("steer and interrupt", async () => {
  const e = client();
  const s = await e.createSession();
  const turn = s.prompt("/delay 50\n/long 400");
  let steered = false;
  for await (const ev of turn) {
    if (ev.type === "text" && !steered) {
      steered = true;
      assert.deepEqual(await s.steer("stop soon"), { held: true });
      await s.interrupt();
    }
  }
  assert.equal((await turn.result()).aborted, true);
  await assert.rejects(s.steer("nothing runs"), /no running turn/);
  await e.close();
});

test("shell, set, compact, then fork at the shell's entry (M18, M19)", async () => {
  const e = client();
  const s = await e.createSession();
  const turn = s.shell("echo hi; exit 3");
  let out = "";
  for await (const ev of turn) if (ev.type === "shell_output") out += ev.delta;
  assert.equal(out, "hi\n");
  const shell = await turn.result();
  assert.equal(shell.exit_code, 3);
  assert.equal(shell.cancelled, false);
  assert.equal((await s.set({ effort: "high" })).effort, "high");
  assert.equal((await s.run("/text after")).final_output, "after");
  await s.compact("the shell command");
  const fork = await s.fork(shell.entry);
  const { entries } = await e.call("session.entries", { session: fork.id });
  assert.deepEqual(entries.map((x) => (x as { id: string }).id), [shell.entry]);
  await e.close();
});

test("asks go to the callback", async () => {
  const asked: string[] = [];
  const e = client({ onAsk: (ask) => { asked.push(ask.method); return { decision: "allow" }; } });
  await e.hello(true);
  const s = await e.createSession({ approval: "all" });
  const result = await s.run('/tool ls {"path": "."}\n/then\n/text listed');
  assert.equal(result.final_output, "listed");
  assert.deepEqual(asked, ["tool.approve"]);
  await e.close();
});

test("a dying server fails waiting calls at once", async () => {
  const e = client();
  const s = await e.createSession();
  const turn = s.prompt("/delay 100\n/long 1000");
  for await (const ev of turn) {
    if (ev.type === "text") {
      e.kill();
      break;
    }
  }
  await assert.rejects(turn.result(), ServerExited);
  await assert.rejects(s.info(), ServerExited);
});

// The example imports the package by its name, as a project that installed
// it does: clients/clients_test.go's TestTypeScriptInstall compiles and runs
// it in fresh projects that installed the package.
test("the README example is example/hello.ts", () => {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const example = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  assert.ok(example.trim().split("\n").length <= 10, "the example is ten lines at most");
  assert.equal(example, readFileSync(join(pkg, "example", "hello.ts"), "utf8"), "README shows example/hello.ts");
  assert.match(example, /from "@e-agent\/client";/, "the example imports the package by its name");
});

const twoTickets = '/tool ticket {"id":1}\n/tool ticket {"id":2}\n/then\n/text ok';
const ticketParams = { type: "object", properties: { id: { type: "integer" } }, required: ["id"] };

test("client tools: two calls of a wave run at once, their values are the results (G1)", async () => {
  const e = client();
  let arrived = 0;
  let release!: () => void;
  const both = new Promise<void>((r) => (release = r));
  const ticket = e.registerTool(
    "ticket",
    async (args) => {
      if (++arrived === 2) release();
      await both; // neither answers before both are pending
      return `ticket ${String(args.id)}: open`;
    },
    { description: "Look up a ticket.", parameters: ticketParams },
  );
  await e.hello(true);
  const s = await e.createSession({ client_tools: [ticket] });
  const turn = s.prompt(twoTickets);
  const contents: Record<number, string> = {};
  for await (const ev of turn) if (ev.type === "tool_end") contents[ev.id] = ev.content ?? "";
  const result = await turn.result();
  assert.equal(result.final_output, "ok");
  assert.deepEqual(contents, { 1: "ticket 1: open", 2: "ticket 2: open" });
  await e.close();
});

test("client tools: refused before hello ask:true; an interrupt aborts the pending calls (G1, G2)", async () => {
  const e = client();
  let started = 0;
  let allStarted!: () => void;
  const running = new Promise<void>((r) => (allStarted = r));
  const aborted: Promise<void>[] = [];
  const ticket = e.registerTool("ticket", (_args, call) => {
    aborted.push(new Promise<void>((r) => call.signal.addEventListener("abort", () => r())));
    if (++started === 2) allStarted();
    return new Promise(() => {}); // never answers
  });
  await assert.rejects(e.createSession({ client_tools: [ticket] }), (err: unknown) => {
    assert.ok(err instanceof RPCError);
    assert.equal(err.code, "invalid_params");
    return true;
  });
  await e.hello(true);
  const s = await e.createSession({ client_tools: [ticket] });
  const turn = s.prompt(twoTickets);
  const outcomes: string[] = [];
  const events = (async () => {
    for await (const ev of turn) if (ev.type === "tool_end") outcomes.push(ev.outcome);
  })();
  await running;
  await s.interrupt();
  await events;
  await Promise.all(aborted);
  assert.equal((await turn.result()).aborted, true);
  assert.deepEqual(outcomes, ["interrupted", "interrupted"]);
  await e.close();
});

test("client tools: a never-answering client times out and the turn goes on (G2)", async () => {
  const e = client();
  const never = e.registerTool("ticket", () => new Promise(() => {}));
  await e.hello(true);
  const s = await e.createSession({ client_tools: [never], client_tool_timeout_ms: 100 });
  const turn = s.prompt('/tool ticket {}\n/then\n/text went on');
  const ends: Event[] = [];
  for await (const ev of turn) if (ev.type === "tool_end") ends.push(ev);
  assert.equal((await turn.result()).final_output, "went on");
  const end = ends[0];
  assert.ok(end?.type === "tool_end" && end.outcome === "failed" && /timed out/.test(end.content ?? ""));
  await e.close();
});
