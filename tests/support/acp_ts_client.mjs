// A whole editor session against `cmdop-tui acp`, driven by the official TypeScript ACP SDK's
// client side (@agentclientprotocol/sdk, installed by .ci/tools under .tools/acp-node): another
// implementation of the protocol than the Python SDK the agent is built on.
//
//   ACP_SDK=<the SDK's dist/v1/stable/acp.js> ACP_AGENT='["python","-m","cmdop_tui","acp"]' \
//     node acp_ts_client.mjs          (in the folder the session works in)
//
// The scenario: initialize, session/new, a prompt whose write_file is asked about (allowed), a
// prompt cancelled mid-stream, then a second agent process that loads the session, then a third
// with the sandbox off whose command runs in this editor's terminal (run for real). It prints
// one JSON object of what it saw on stdout; the test (tests/functional/test_acp_real_client.py)
// scripts the model and judges the object.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const sdk = await import(pathToFileURL(process.env.ACP_SDK).href);
const { client, methods, ndJsonStream, PROTOCOL_VERSION } = sdk;
const [program, ...args] = JSON.parse(process.env.ACP_AGENT);
const cwd = process.cwd();

function startAgent(more = []) {
  const child = spawn(program, [...args, ...more], { cwd, stdio: ["pipe", "pipe", "inherit"] });
  const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, stream, exited };
}

function editor(seen) {
  let waiting = null;
  const app = client({ name: "acp-ts-test-client" })
    .onNotification(methods.client.session.update, ({ params }) => {
      seen.updates.push(params.update);
      if (waiting && waiting.kind === params.update.sessionUpdate) {
        waiting.resolve();
        waiting = null;
      }
    })
    .onRequest(methods.client.session.requestPermission, ({ params }) => {
      seen.permissions.push({ title: params.toolCall.title, kinds: params.options.map((o) => o.kind) });
      return { outcome: { outcome: "selected", optionId: params.options[0].optionId } };
    });
  const next = (kind) => new Promise((resolve) => (waiting = { kind, resolve }));
  return { app, next };
}

// The editor's terminals: each command run for real, its output kept, released at the end.
function terminals(app, seen) {
  const made = new Map();
  const terminal = (params) => made.get(params.terminalId);
  return app
    .onRequest(methods.client.terminal.create, ({ params }) => {
      const terminalId = `term-${made.size + 1}`;
      const child = spawn(params.command, params.args ?? [], { cwd: params.cwd, stdio: ["ignore", "pipe", "pipe"] });
      const running = { child, output: "", status: null };
      running.closed = new Promise((resolve) =>
        child.on("close", (code, signal) => resolve((running.status = { exitCode: code, signal }))),
      );
      child.stdout.on("data", (data) => (running.output += data));
      child.stderr.on("data", (data) => (running.output += data));
      made.set(terminalId, running);
      seen.push({ command: params.command, args: params.args, cwd: params.cwd, limit: params.outputByteLimit });
      return { terminalId };
    })
    .onRequest(methods.client.terminal.waitForExit, async ({ params }) => await terminal(params).closed)
    .onRequest(methods.client.terminal.output, ({ params }) => {
      const { output, status } = terminal(params);
      return status ? { output, truncated: false, exitStatus: status } : { output, truncated: false };
    })
    .onRequest(methods.client.terminal.kill, ({ params }) => {
      terminal(params).child.kill("SIGKILL");
      return {};
    })
    .onRequest(methods.client.terminal.release, async ({ params }) => {
      const { child, closed } = terminal(params);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await closed;
      seen.at(-1).released = true;
      return {};
    });
}

const report = { stopReasons: [], permissions: [], first: [], loaded: [], ran: [], terminals: [] };

// The first agent: a new session, a write asked about, a cancel mid-stream.
{
  const seen = { updates: report.first, permissions: report.permissions };
  const { app, next } = editor(seen);
  const agent = startAgent();
  await app.connectWith(agent.stream, async (peer) => {
    const init = await peer.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: {},
    });
    report.loadSession = init.agentCapabilities.loadSession;
    const session = await peer.request(methods.agent.session.new, { cwd, mcpServers: [] });
    report.sessionId = session.sessionId;
    report.modes = session.modes.availableModes.map((m) => m.id);
    const wrote = await peer.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "write a.txt" }],
    });
    report.stopReasons.push(wrote.stopReason);
    const streaming = next("agent_message_chunk");
    const talking = peer.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "talk" }],
    });
    await streaming;
    await peer.notify(methods.agent.session.cancel, { sessionId: session.sessionId });
    report.stopReasons.push((await talking).stopReason);
  });
  agent.child.stdin.end();
  report.firstExit = await agent.exited;
}

// The second agent: the session loaded, its history told again.
{
  const seen = { updates: report.loaded, permissions: report.permissions };
  const { app } = editor(seen);
  const agent = startAgent();
  await app.connectWith(agent.stream, async (peer) => {
    await peer.request(methods.agent.initialize, { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
    await peer.request(methods.agent.session.load, { sessionId: report.sessionId, cwd, mcpServers: [] });
  });
  agent.child.stdin.end();
  report.secondExit = await agent.exited;
}

// The third agent, the sandbox off: a command run in the editor's terminal.
{
  const seen = { updates: report.ran, permissions: report.permissions };
  const { app } = editor(seen);
  const agent = startAgent(["--sandbox", "off"]);
  await terminals(app, report.terminals).connectWith(agent.stream, async (peer) => {
    await peer.request(methods.agent.initialize, {
      protocolVersion: PROTOCOL_VERSION,
      clientCapabilities: { terminal: true },
    });
    const session = await peer.request(methods.agent.session.new, { cwd, mcpServers: [] });
    await peer.request(methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "auto" });
    const ran = await peer.request(methods.agent.session.prompt, {
      sessionId: session.sessionId,
      prompt: [{ type: "text", text: "run it" }],
    });
    report.stopReasons.push(ran.stopReason);
  });
  agent.child.stdin.end();
  report.thirdExit = await agent.exited;
}

process.stdout.write(JSON.stringify(report) + "\n");
