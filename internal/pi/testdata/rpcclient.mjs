// Drives `e --mode rpc` with pi 1.6.0's own RpcClient (from the npm
// package), through every command and event family. Run by
// TestPiRpcClient, which puts a `node` shim first on PATH: RpcClient spawns
// `node CLI --mode rpc …`, and the shim runs e with the same arguments.
//
// env: PI_RPC_CLIENT (path of dist/modes/rpc/rpc-client.js), E_PI_CLI (the
// CLI path the shim recognises), WORK (the working directory),
// PI_CLIENT_LEGACY=1 for the older client (0.73.1, prime-agent's dialect):
// it waits for agent_end rather than agent_settled, its prompt() returns
// no disposition and it lacks clearQueue, getAvailableThinkingLevels,
// getEntries and getTree, so those checks are skipped.
import { pathToFileURL } from "node:url";
import fs from "node:fs";
import path from "node:path";

const { RpcClient } = await import(pathToFileURL(process.env.PI_RPC_CLIENT).href);
const work = process.env.WORK;
const legacy = process.env.PI_CLIENT_LEGACY === "1";
const END = legacy ? "agent_end" : "agent_settled"; // where collectEvents stops
let failures = 0;

function check(cond, what) {
	if (!cond) throw new Error(what);
}

async function step(name, f) {
	try {
		await f();
		console.log(`ok ${name}`);
	} catch (e) {
		failures++;
		console.log(`not ok ${name}: ${e && e.stack ? e.stack : e}`);
	}
}

// userText is a user message's text: pi 1.6.0 writes its content as blocks.
function userText(content) {
	return typeof content === "string" ? content : content.filter((b) => b.type === "text").map((b) => b.text).join("");
}

function types(events) {
	return events.map((e) => e.type);
}

function text(events) {
	return events
		.filter((e) => e.type === "message_update" && e.assistantMessageEvent.type === "text_delta")
		.map((e) => e.assistantMessageEvent.delta)
		.join("");
}

const client = new RpcClient({ cliPath: process.env.E_PI_CLI, cwd: work, args: ["--no-session"] });
await client.start();

await step("get_state", async () => {
	const st = await client.getState();
	check(st.model && st.model.provider === "e" && st.model.id === "offline", `model ${JSON.stringify(st.model)}`);
	check(st.isStreaming === false && typeof st.sessionId === "string", JSON.stringify(st));
	check(st.sessionFile === undefined, "--no-session has no session file");
});

await step("prompt: text streams, agent_settled ends the run", async () => {
	const events = await client.promptAndWait("/text hello world");
	const t = types(events);
	for (const want of ["agent_start", "turn_start", "message_start", "message_update", "message_end", "turn_end", "agent_end", END]) {
		check(t.includes(want), `no ${want} in ${t}`);
	}
	check(text(events) === "hello world", `text ${JSON.stringify(text(events))}`);
	check(legacy || t.indexOf("agent_end") < t.indexOf("agent_settled"), "agent_end before agent_settled");
	const end = events.find((e) => e.type === "agent_end");
	// As pi 1.6.0's: the session's first request opens with its system message.
	const roles0 = end.messages.map((m) => m.role);
	check(JSON.stringify(roles0) === JSON.stringify(["system", "user", "assistant"]), JSON.stringify(roles0));
	check((await client.getLastAssistantText()) === "hello world", "get_last_assistant_text");
});

await step("thinking deltas", async () => {
	const events = await client.promptAndWait("/think pondering\n/text ok");
	const kinds = events.filter((e) => e.type === "message_update").map((e) => e.assistantMessageEvent.type);
	check(kinds.includes("thinking_start") && kinds.includes("thinking_delta") && kinds.includes("thinking_end"), String(kinds));
});

fs.writeFileSync(path.join(work, "a.txt"), "alpha\n");
await step("tool call: tool_execution_* and two turns", async () => {
	const events = await client.promptAndWait('/tool read {"path":"a.txt"}\n/then\n/text read it');
	const t = types(events);
	check(t.includes("tool_execution_start") && t.includes("tool_execution_end"), String(t));
	const end = events.find((e) => e.type === "tool_execution_end");
	check(end.toolName === "read" && !end.isError && JSON.stringify(end.result).includes("alpha"), JSON.stringify(end));
	check(t.filter((x) => x === "turn_start").length === 2, "two turns");
	const calls = events.filter((e) => e.type === "message_update" && e.assistantMessageEvent.type === "toolcall_end");
	check(calls.length === 1 && calls[0].assistantMessageEvent.toolCall.id === end.toolCallId, "toolcall ids agree");
});

await step("bash tool: accumulated partial results", async () => {
	const events = await client.promptAndWait('/tool bash {"command":"echo one; echo two"}\n/then\n/text ran');
	const ups = events.filter((e) => e.type === "tool_execution_update");
	check(ups.length >= 1, "no tool_execution_update");
	const last = ups[ups.length - 1].partialResult.content[0].text;
	check(last.includes("one") && last.includes("two"), `partial ${JSON.stringify(last)}`);
});

await step("get_messages", async () => {
	const msgs = await client.getMessages();
	const roles = msgs.map((m) => m.role);
	check(roles[0] === "system" && roles[1] === "user" && roles.includes("toolResult") && roles.includes("assistant"), String(roles));
});

await step("prompt while streaming needs streamingBehavior; steer and follow_up queue", async () => {
	const events = [];
	const off = client.onEvent((e) => events.push(e));
	const settled = client.waitForIdle(20000);
	const disposition = await client.prompt("/delay 100\n/text first words come slowly");
	check(legacy || disposition === "started", "started");
	let refused = false;
	try {
		await client.prompt("again");
	} catch (e) {
		refused = /streamingBehavior/.test(String(e));
	}
	check(legacy || refused, "a second prompt without streamingBehavior is refused"); // 0.73.1's prompt() ignores failures
	const sd = await client.steer("/text steered");
	const fd = await client.followUp("/text followed");
	check(legacy || (sd === "queued" && fd === "queued"), "steer and follow_up queued");
	await settled;
	off();
	const t = types(events);
	check(t.includes("queue_update"), "queue_update");
	check(t.filter((x) => x === END).length === 1, `one ${END}: ${t}`);
	const users = events.filter((e) => e.type === "message_start" && e.message.role === "user").map((e) => userText(e.message.content));
	check(users.includes("/text steered") && users.includes("/text followed"), JSON.stringify(users));
	check(users.indexOf("/text steered") < users.indexOf("/text followed"), "steer before follow-up");
});

await step("abort", async () => {
	const events = [];
	const off = client.onEvent((e) => events.push(e));
	await client.prompt("/delay 200\n/long 50");
	await new Promise((r) => setTimeout(r, 300));
	await client.abort();
	off();
	const s = events.find((e) => e.type === END);
	const last = events.filter((e) => e.type === "message_end").pop();
	check(s && (legacy ? last.message.stopReason === "aborted" : s.aborted === true), `settled ${JSON.stringify(s)}`);
	check(!(await client.getState()).isStreaming, "idle after abort");
});

if (!legacy) await step("clear_queue", async () => {
	const q = await client.clearQueue();
	check(Array.isArray(q.steering) && Array.isArray(q.followUp), JSON.stringify(q));
});

await step("thinking levels", async () => {
	if (!legacy) {
		const levels = await client.getAvailableThinkingLevels();
		check(JSON.stringify(levels) === JSON.stringify(["off", "minimal", "low", "medium", "high"]), JSON.stringify(levels));
	}
	const seen = [];
	const off = client.onEvent((e) => e.type === "thinking_level_changed" && seen.push(e.level));
	await client.setThinkingLevel("high");
	check((await client.getState()).thinkingLevel === "high", "high");
	const c = await client.cycleThinkingLevel();
	check(c.level === "off", JSON.stringify(c)); // pi cycles high → off
	await client.setThinkingLevel("max"); // clamped to the model
	check((await client.getState()).thinkingLevel === "high", "clamped");
	off();
	check(seen.length >= 2, `thinking_level_changed ${seen}`);
});

await step("models", async () => {
	const models = await client.getAvailableModels();
	const ids = models.map((m) => `${m.provider}/${m.id}`);
	check(ids.includes("e/offline") && ids.includes("mock/mock-1"), String(ids));
	const m = await client.setModel("mock", "mock-1");
	check(m.id === "mock-1" && m.api === "openai-completions", JSON.stringify(m));
	const events = await client.promptAndWait("hi");
	check(text(events) === "w1 w2 w3 w4 w5 ", `mock text ${JSON.stringify(text(events))}`);
	// As pi's registry: the models.json models, e's offline model no
	// longer listed once another model is in use.
	const c = await client.cycleModel();
	check(c && c.model && c.model.id === "mock-2" && typeof c.thinkingLevel === "string" && c.isScoped === false, JSON.stringify(c));
	const back = await client.cycleModel();
	check(back && back.model && back.model.id === "mock-1", JSON.stringify(back));
	await client.setModel("e", "offline");
	let refused = "";
	try {
		await client.setModel("nope", "none");
	} catch (e) {
		refused = String(e);
	}
	check(/Model not found/.test(refused), refused);
});

await step("compact", async () => {
	const events = [];
	const off = client.onEvent((e) => events.push(e));
	const r = await client.compact("keep it short");
	off();
	check(typeof r.summary === "string" && r.summary.length > 0 && typeof r.firstKeptEntryId === "string", JSON.stringify(r));
	const t = types(events);
	check(t.includes("compaction_start") && t.includes("compaction_end"), String(t));
	await client.setAutoCompaction(false);
	check((await client.getState()).autoCompactionEnabled === false, "auto compaction off");
	await client.setAutoCompaction(true);
});

await step("auto retry", async () => {
	// pi ends the failed attempt's run (agent_end willRetry:true) and
	// retries in a new one, so the older client's wait ends at the first
	// agent_end: a listener sees both runs.
	const events = [];
	let ends = 0;
	let bothEnded;
	const ended = new Promise((r) => (bothEnded = r));
	const off = client.onEvent((e) => {
		events.push(e);
		if (e.type === "agent_end" && ++ends === 2) bothEnded();
	});
	await client.promptAndWait("/error retryable\n/text recovered");
	await ended;
	off();
	const t = types(events);
	const willRetry = events.filter((e) => e.type === "agent_end").map((e) => e.willRetry);
	check(willRetry.join() === "true,false", `agent_end willRetry ${willRetry}`);
	check(t[t.lastIndexOf("message_end") + 1] === "auto_retry_end", `auto_retry_end after the answer's message_end: ${t}`);
	check(t.includes("auto_retry_start") && t.includes("auto_retry_end"), String(t));
	check(events.find((e) => e.type === "auto_retry_end").success === true, "retry succeeded");
	await client.setAutoRetry(false);
	const ev2 = await client.promptAndWait("/error retryable");
	check(!types(ev2).includes("auto_retry_start"), "no retry when off");
	const last = ev2.filter((e) => e.type === "message_end").pop();
	check(last.message.stopReason === "error" && last.message.errorMessage, JSON.stringify(last.message));
	await client.setAutoRetry(true);
	await client.abortRetry();
});

await step("bash command into the context", async () => {
	const deltas = [];
	const off = client.onEvent((e) => e.type === "bash_execution_update" && deltas.push(e.delta));
	const r = await client.bash("echo from-bash");
	off();
	check(r.output.includes("from-bash") && r.exitCode === 0 && r.cancelled === false, JSON.stringify(r));
	check(deltas.join("").includes("from-bash"), "bash_execution_update");
	const msgs = await client.getMessages();
	// pi's get_messages holds the command as a bashExecution message.
	const rec = msgs.find((m) => m.role === "bashExecution" && m.command === "echo from-bash");
	check(rec && rec.output.includes("from-bash") && rec.exitCode === 0, `recorded: ${JSON.stringify(msgs)}`);
	const bad = await client.bash("exit 3");
	check(bad.exitCode === 3, JSON.stringify(bad));
	await client.abortBash();
});

await step("session stats, name, export", async () => {
	const st = await client.getSessionStats();
	check(st.userMessages > 0 && st.tokens.total > 0 && st.contextUsage.contextWindow > 0, JSON.stringify(st));
	let named = null;
	const off = client.onEvent((e) => e.type === "session_info_changed" && (named = e.name));
	await client.setSessionName("my work");
	off();
	check(named === "my work" && (await client.getState()).sessionName === "my work", "name");
	const out = path.join(work, "s.html");
	const r = await client.exportHtml(out);
	check(r.path === out && fs.readFileSync(out, "utf8").includes("<html"), "export");
});

await step("entries, tree, fork, clone", async () => {
	if (!legacy) {
		const { entries, leafId } = await client.getEntries();
		check(entries.length > 0 && leafId === entries[entries.length - 1].id, "entries and leaf");
		const since = await client.getEntries(entries[0].id);
		check(since.entries.length === entries.length - 1, "since");
		const { tree } = await client.getTree();
		check(tree.length >= 1 && tree[0].entry.id === entries[0].id, "tree");
	}
	const forks = await client.getForkMessages();
	check(forks.length > 1 && forks[0].text === "/text hello world", JSON.stringify(forks[0]));
	const f = await client.fork(forks[1].entryId);
	check(f.cancelled === false && f.text === forks[1].text, JSON.stringify(f));
	const after = await client.getMessages();
	check(after.length === 3 && after[0].role === "system", `forked history ${after.length}`); // system, user, assistant
	const c = await client.clone();
	check(c.cancelled === false && (await client.getMessages()).length === 3, "clone");
	check((await client.getCommands()).length === 0, "commands");
	const n = await client.newSession();
	check(n.cancelled === false && (await client.getState()).messageCount === 0, "new session");
});

await client.stop();

// A saved session: in the config dir's sessions folder, and switch_session.
const saved = new RpcClient({ cliPath: process.env.E_PI_CLI, cwd: work, args: [] });
await saved.start();
await step("saved sessions and switch_session", async () => {
	await saved.promptAndWait("/text saved one");
	const first = (await saved.getState()).sessionFile;
	check(first && first.startsWith(process.env.PI_CODING_AGENT_DIR) && fs.existsSync(first), `file ${first}`);
	await saved.newSession();
	check((await saved.getState()).sessionFile !== first, "new file");
	const r = await saved.switchSession(first);
	check(r.cancelled === false && (await saved.getLastAssistantText()) === "saved one", "switched back");
});
// What pi 1.6.0's own rpc.test.ts reads of a saved session: pi's session
// file (session-format.md), whose lines name a bash command, a name and a
// compaction as pi writes them.
await step("the session file is pi's", async () => {
	const file = (await saved.getState()).sessionFile;
	const unique = `file-${Date.now()}`;
	await saved.bash(`echo ${unique}`);
	await saved.setSessionName("my-test-session");
	await saved.promptAndWait("/text said again");
	await saved.compact();
	const entries = fs.readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));
	check(entries[0].type === "session" && typeof entries[0].timestamp === "string", JSON.stringify(entries[0]));
	const roles = entries.filter((e) => e.type === "message").map((e) => e.message.role);
	check(roles.includes("user") && roles.includes("assistant"), String(roles));
	const bash = entries.filter((e) => e.type === "message" && e.message.role === "bashExecution");
	check(bash.length === 1 && bash[0].message.output.includes(unique), JSON.stringify(bash));
	const info = entries.filter((e) => e.type === "session_info");
	check(info.length === 1 && info[0].name === "my-test-session", JSON.stringify(info));
	const comp = entries.filter((e) => e.type === "compaction");
	check(comp.length === 1 && typeof comp[0].summary === "string", JSON.stringify(comp));
	const ids = new Set(entries.slice(1).map((e) => e.id));
	check(entries.slice(1).every((e) => e.parentId === null || ids.has(e.parentId)), "every parentId names an entry");
});
await saved.stop();

console.log(failures === 0 ? "PASS" : `FAIL ${failures}`);
process.exit(failures === 0 ? 0 : 1);
