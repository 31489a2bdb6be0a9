// A client of e rpc, e's session server over JSON Lines. No runtime
// dependencies: Node's child_process and readline only. The wire types come
// from ./protocol.ts, generated from schemas/ (never edit it).

import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";

import type {
  AskLine,
  ClientTool,
  Event,
  HelloResult,
  MethodName,
  Methods,
  NoticeLine,
  Result,
  SessionCreateParams,
  SessionCreateResult,
  SessionPromptParams,
  SessionSetParams,
  SessionShellResult,
  ToolCallCancelledLine,
  ToolCallLine,
} from "./protocol.js";

export type * from "./protocol.js";

/** An error response: code is the server's machine-readable code ("" when it sent none). */
export class RPCError extends Error {
  constructor(
    readonly method: string,
    message: string,
    readonly code: string = "",
    readonly response?: unknown,
  ) {
    super(message);
    this.name = "RPCError";
  }
}

/** The server closed its stdout (it exited or crashed) while a call waited. */
export class ServerExited extends RPCError {
  constructor(method: string, detail: string) {
    super(method, `e rpc exited: ${detail}`, "server_exited");
    this.name = "ServerExited";
  }
}

/** The server command: $E_RPC (shell words, no quoting), else $E_BIN rpc, else e rpc. */
export function defaultCommand(): string[] {
  const rpc = process.env.E_RPC;
  if (rpc) return rpc.split(/\s+/).filter((w) => w !== "");
  return [process.env.E_BIN || "e", "rpc"];
}

export interface ClientOptions {
  command?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Answers an ask line; the value is ask.reply's result, undefined declines. */
  onAsk?: (ask: AskLine) => unknown | Promise<unknown>;
  onNotice?: (notice: NoticeLine) => void;
  /** Where the server's stderr goes; default: this process's stderr. */
  stderr?: "inherit" | "ignore";
}

/** A tool_call its handler serves: the line, and a signal that aborts when e cancels the call. */
export interface ToolCall {
  line: ToolCallLine;
  signal: AbortSignal;
}

/** Runs a client tool: the value (a string, or any JSON value) is the result's content; a throw fails the call. */
export type ToolHandler = (args: Record<string, unknown>, call: ToolCall) => unknown | Promise<unknown>;

type Params<M extends MethodName> = Methods[M]["params"];
type ResultOf<M extends MethodName> = Methods[M]["result"];

interface Pending {
  method: string;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onEvent?: (e: Event) => void;
}

/** One e rpc process. */
export class Client {
  private proc: ChildProcessWithoutNullStreams;
  private nextId = 0;
  private pending = new Map<number, Pending>();
  private exited: string | undefined;
  private tools = new Map<string, ToolHandler>();
  private toolCalls = new Map<number, AbortController>();
  /** Resolves with the exit status once the server has exited. */
  readonly closed: Promise<number | null>;

  constructor(private opts: ClientOptions = {}) {
    const [cmd, ...args] = opts.command ?? defaultCommand();
    this.proc = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["pipe", "pipe", "pipe"] });
    if (opts.stderr !== "ignore") this.proc.stderr.pipe(process.stderr);
    else this.proc.stderr.resume();
    this.proc.stdin.on("error", () => {}); // a dead server is reported through its exit
    // readline splits at \n (and \r\n) only: U+2028 inside a string is no line end.
    const lines = createInterface({ input: this.proc.stdout, crlfDelay: Infinity });
    lines.on("line", (raw) => this.route(raw));
    let spawnError = "";
    this.proc.on("error", (err) => (spawnError = err.message));
    this.closed = new Promise((resolve) => {
      this.proc.on("close", (code, signal) => {
        this.exited = spawnError || `exit status ${code ?? signal}`;
        for (const p of this.pending.values()) p.reject(new ServerExited(p.method, this.exited));
        this.pending.clear();
        resolve(code);
      });
    });
  }

  private route(raw: string): void {
    let line: Record<string, unknown>;
    try {
      const v: unknown = JSON.parse(raw);
      if (typeof v !== "object" || v === null || Array.isArray(v)) return;
      line = v as Record<string, unknown>;
    } catch {
      return; // not a protocol line
    }
    const type = line.type;
    if (type === "ask") {
      void this.answer(line as unknown as AskLine);
      return;
    }
    if (type === "notice") {
      this.opts.onNotice?.(line as unknown as NoticeLine);
      return;
    }
    if (type === "tool_call") {
      void this.serveTool(line as unknown as ToolCallLine);
      return;
    }
    if (type === "tool_call_cancelled") {
      const call = (line as unknown as ToolCallCancelledLine).call;
      this.toolCalls.get(call)?.abort();
      this.toolCalls.delete(call);
      return;
    }
    if (type !== undefined) {
      // An event: it belongs to the request it serves. Unknown types pass through.
      const p = this.pending.get(line.request as number);
      p?.onEvent?.(line as unknown as Event);
      return;
    }
    if (!("result" in line) && !("error" in line)) return;
    const id = line.id as number;
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    if ("error" in line) {
      p.reject(new RPCError(p.method, String(line.error), typeof line.code === "string" ? line.code : "", line));
    } else {
      p.resolve(line.result);
    }
  }

  private async answer(ask: AskLine): Promise<void> {
    let result: unknown;
    try {
      result = await this.opts.onAsk?.(ask);
    } catch {
      result = undefined; // a failing callback declines the question
    }
    const params: { ask: number; result?: unknown } = { ask: ask.ask };
    if (result !== undefined && result !== null) params.result = result;
    await this.call("ask.reply", params).catch(() => {}); // cancelled meanwhile, or the server died
  }

  /**
   * Serves the client tool name with handler and returns its spec for
   * createSession({ client_tools: […] }) (which needs hello with ask:true first).
   */
  registerTool(name: string, handler: ToolHandler, opts: { description?: string; parameters?: object } = {}): ClientTool {
    this.tools.set(name, handler);
    return { name, ...opts } as ClientTool;
  }

  private async serveTool(line: ToolCallLine): Promise<void> {
    const abort = new AbortController();
    this.toolCalls.set(line.call, abort);
    let content: string;
    let isError = false;
    try {
      const handler = this.tools.get(line.name);
      if (!handler) throw new Error(`this client has no handler for tool ${JSON.stringify(line.name)}`);
      const out = await handler(line.arguments as Record<string, unknown>, { line, signal: abort.signal });
      content = typeof out === "string" ? out : JSON.stringify(out ?? null);
    } catch (err) {
      content = err instanceof Error ? err.message : String(err); // the model reads what failed
      isError = true;
    }
    if (!this.toolCalls.delete(line.call)) return; // cancelled meanwhile: e no longer waits for it
    const params = isError ? { call: line.call, content, is_error: true } : { call: line.call, content };
    await this.call("tool.result", params).catch(() => {}); // cancelled meanwhile (unknown_call), or the server died
  }

  /** Sends a request; events of the request go to onEvent until the response. */
  call<M extends MethodName>(method: M, params?: Params<M>, onEvent?: (e: Event) => void): Promise<ResultOf<M>> {
    return new Promise<ResultOf<M>>((resolve, reject) => {
      if (this.exited !== undefined) {
        reject(new ServerExited(method, this.exited));
        return;
      }
      const id = ++this.nextId;
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject, onEvent });
      const line: Record<string, unknown> = { id, method };
      if (params) line.params = dropUndefined(params);
      // JSON.stringify escapes U+2028/U+2029 nowhere, and need not: they are legal in JSON.
      this.proc.stdin.write(JSON.stringify(line) + "\n");
    });
  }

  hello(ask = true): Promise<HelloResult> {
    return this.call("hello", { ask });
  }

  async createSession(params: SessionCreateParams = {}): Promise<Session> {
    const info = await this.call("session.create", params);
    return new Session(this, info.session, info);
  }

  /** Closes stdin (e rpc ends every session and exits) and waits for the exit. */
  async close(): Promise<number | null> {
    this.proc.stdin.end();
    return this.closed;
  }

  /** Kills the server (tests of a dying server use it). */
  kill(): void {
    this.proc.kill("SIGKILL");
  }
}

function dropUndefined(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/**
 * A running request that streams events: session.prompt (its result is the turn result) or
 * session.shell (its result says how the command ended). Iterate it for its events, await
 * result() for the response.
 */
export class Turn<R = Result> implements AsyncIterable<Event> {
  private queue: Event[] = [];
  private wake: (() => void) | undefined;
  private finished = false;
  private readonly response: Promise<R>;

  constructor(start: (onEvent: (e: Event) => void) => Promise<R>) {
    this.response = start((e) => {
      this.queue.push(e);
      this.wake?.();
    });
    const end = () => {
      this.finished = true;
      this.wake?.();
    };
    this.response.then(end, end);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Event> {
    for (;;) {
      const e = this.queue.shift();
      if (e !== undefined) {
        yield e;
        continue;
      }
      if (this.finished) return;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }

  /** The response's result; rejects with RPCError when the request failed. */
  result(): Promise<R> {
    return this.response;
  }
}

/** session.prompt's params beyond the session, the prompt and its images. */
export type PromptOptions = Omit<SessionPromptParams, "session" | "prompt" | "images">;

/** One session of a Client. */
export class Session {
  constructor(
    readonly client: Client,
    readonly id: string,
    readonly created?: SessionCreateResult,
  ) {}

  /**
   * Starts a turn. opts are session.prompt's other params: output_schema (a JSON Schema the final
   * answer must be a value of: the result's structured_output, J1) and the turn's budget
   * (max_model_calls, max_tokens, max_cost_usd, max_duration_ms, N1; the result's stop_reason says
   * what ended it).
   */
  prompt(text: string, images?: string[], opts: PromptOptions = {}): Turn {
    return new Turn((onEvent) =>
      this.client.call("session.prompt", { session: this.id, prompt: text, images, ...opts }, onEvent),
    );
  }

  /**
   * Runs a shell command of the user's into the session's context (M18): its output streams as
   * shell_output events; exclude keeps it in the log but out of the model's context.
   */
  shell(command: string, opts: { exclude?: boolean; timeout_ms?: number } = {}): Turn<SessionShellResult> {
    return new Turn((onEvent) => this.client.call("session.shell", { session: this.id, command, ...opts }, onEvent));
  }

  async run(text: string, opts: PromptOptions = {}): Promise<Result> {
    const turn = this.prompt(text, undefined, opts);
    for await (const _ of turn) void _;
    return turn.result();
  }

  steer(text: string) {
    return this.client.call("session.steer", { session: this.id, text });
  }

  interrupt() {
    return this.client.call("session.interrupt", { session: this.id });
  }

  info() {
    return this.client.call("session.info", { session: this.id });
  }

  messages() {
    return this.client.call("session.messages", { session: this.id });
  }

  set(params: Omit<SessionSetParams, "session">) {
    return this.client.call("session.set", { ...params, session: this.id });
  }

  compact(focus?: string) {
    return this.client.call("session.compact", { session: this.id, focus });
  }

  /** A new session with this one's history, or its history up to entry at (M19). */
  async fork(at?: string): Promise<Session> {
    const info = await this.client.call("session.fork", { session: this.id, at });
    return new Session(this.client, info.session);
  }

  close() {
    return this.client.call("session.close", { session: this.id });
  }
}
