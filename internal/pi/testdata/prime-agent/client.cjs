const { spawn } = require("child_process");
const { StringDecoder } = require("string_decoder");

const agent = spawn("prime-agent", ["--mode", "rpc", "--no-session"]);

function attachJsonlReader(stream, onLine) {
  const decoder = new StringDecoder("utf8");
  let buffer = "";

  stream.on("data", (chunk) => {
    buffer += typeof chunk === "string" ? chunk : decoder.write(chunk);
    
    while (true) {
      const nl = buffer.indexOf("\n");
      if (nl === -1) break;
      
      let line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      
      // Strip optional CRLF
      if (line.endsWith("\r")) line = line.slice(0, -1);
      
      onLine(line);
    }
  });

  stream.on("end", () => {
    buffer += decoder.end();
    if (buffer.length) {
      onLine(buffer.endsWith("\r") ? buffer.slice(0, -1) : buffer);
    }
  });
}

attachJsonlReader(agent.stdout, (line) => {
  const ev = JSON.parse(line);
  
  if (ev.type === "message_update") {
    const { assistantMessageEvent } = ev;
    if (assistantMessageEvent.type === "text_delta") {
      process.stdout.write(assistantMessageEvent.delta);
    }
  }
  
  if (ev.type === "agent_end") {
    console.log("\n[agent finished]");
    process.exit(0);
  }
});

// Send initial prompt
agent.stdin.write(
  JSON.stringify({ type: "prompt", message: "Hello from Node!" }) + "\n"
);

// Graceful abort handling
process.on("SIGINT", () => {
  agent.stdin.write(JSON.stringify({ type: "abort" }) + "\n");
});
