// tmuxlocd opencode plugin
// Written by `tmuxlocd install opencode`; `tmuxlocd install opencode --remove` deletes it.
//
// opencode has no command hooks.  This plugin runs tmuxlocd's hook command with the
// Claude-shaped event JSON on stdin and puts the text it prints into the system prompt.
// Every decision (told once, the turn count, what changed) is the hook's; the plugin keeps
// only the last text per session, because a system prompt is built anew for every model
// request: what one request carried, the next does not hold.
//
// - a session this process has not seen: SessionStart (the hook tells the location);
// - a user message (chat.message): UserPromptSubmit at its first model request;
// - a shell tool call (tool.execute.after, tool "bash"): PostToolUse at the next request;
// - every other request of the session carries the last text unchanged;
// - the title generator's request (opencode 1.18: its system prompt starts "You are a
//   title generator") gets nothing and consumes nothing.
//
// The same command hears what opencode's bus tells of the session's agent (opencode 1.18):
// permission.asked -> PermissionRequest (tool_name: the permission asked for),
// permission.replied -> PermissionReplied, question.asked -> Notification
// (elicitation_dialog), question.replied and question.rejected -> QuestionReplied,
// session.status idle -> Stop, session.deleted -> SessionEnd.  A subagent's session (a
// child, with a parentID) is its root session's agent: its events name the root in
// root_session_id, and its idling and deletion are not the root's.  The hook runs once at a
// time, in the order of the events, and dispose waits for the last one: its process is the
// harness process the daemon holds the agent by.
import { spawn } from "node:child_process"

const ARGV = [];
const TIMEOUT_MS = 10000
const LOOKUP_MS = 2000
const TITLE = "You are a title generator"

function ask(event) {
  return new Promise((resolve) => {
    let out = ""
    let child
    try {
      child = spawn(ARGV[0], ARGV.slice(1), { stdio: ["pipe", "pipe", "ignore"], timeout: TIMEOUT_MS })
    } catch {
      resolve(null)
      return
    }
    child.on("error", () => resolve(null))
    child.stdout.on("data", (chunk) => { out += chunk })
    child.on("close", () => {
      if (!out.trim()) return resolve(null)
      try {
        const text = JSON.parse(out)?.hookSpecificOutput?.additionalContext
        resolve(typeof text === "string" ? text : null)
      } catch {
        resolve(null)
      }
    })
    child.stdin.on("error", () => {})
    child.stdin.end(JSON.stringify(event))
  })
}

export const TmuxLocation = async (input) => {
  const pending = new Map() // sessionID -> the event its next request reports
  const told = new Map() // sessionID -> the text its requests carry
  const parents = new Map() // sessionID -> its parent's, or null for a root session
  let chain = Promise.resolve() // the hook runs once at a time, in order

  function serially(step) {
    const done = chain.then(step)
    chain = done.then(() => {}, () => {})
    return done
  }

  function learn(info) {
    if (info && typeof info.id === "string")
      parents.set(info.id, typeof info.parentID === "string" ? info.parentID : null)
  }

  // The parent of a session the bus has not told of (one created before this process, a
  // subagent's continued by a new one): opencode's own client, bounded in time; unknown is
  // a root.
  async function parentOf(id) {
    if (parents.has(id)) return parents.get(id)
    let parent = null
    try {
      const found = await Promise.race([
        input?.client?.session?.get({ path: { id } }),
        new Promise((resolve) => setTimeout(resolve, LOOKUP_MS).unref?.()),
      ])
      const value = found?.data?.parentID
      if (typeof value === "string") parent = value
    } catch {}
    parents.set(id, parent)
    return parent
  }

  async function rootOf(id) {
    const seen = new Set([id])
    let root = id
    for (;;) {
      const parent = await parentOf(root)
      if (!parent || seen.has(parent)) return root
      seen.add(parent)
      root = parent
    }
  }

  // An event of the session ``id``, with its agent's session when that is another's.
  async function tell(id, fields) {
    const root = await rootOf(id)
    const event = { ...fields, session_id: id }
    if (root !== id) event.root_session_id = root
    return ask(event)
  }

  // What the bus tells of an agent (not of a subagent's idling or end: the root goes on).
  function stateEvent(event) {
    const p = event?.properties ?? {}
    switch (event?.type) {
      case "session.created":
      case "session.updated":
        learn(p.info)
        return null
      case "permission.asked":
        return [p.sessionID, { hook_event_name: "PermissionRequest", tool_name: p.permission }, true]
      case "permission.replied":
        return [p.sessionID, { hook_event_name: "PermissionReplied", reply: p.reply }, true]
      case "question.asked":
        return [p.sessionID, { hook_event_name: "Notification", notification_type: "elicitation_dialog" }, true]
      case "question.replied":
      case "question.rejected":
        return [p.sessionID, { hook_event_name: "QuestionReplied" }, true]
      case "session.status":
        if (p.status?.type !== "idle") return null
        return [p.sessionID, { hook_event_name: "Stop" }, false]
      case "session.deleted":
        learn(p.info)
        return [p.info?.id, { hook_event_name: "SessionEnd", reason: "deleted" }, false]
    }
    return null
  }

  return {
    event: async ({ event }) => {
      const found = stateEvent(event)
      if (!found) return
      const [id, fields, ofSubagents] = found
      if (typeof id !== "string" || !id) return
      await serially(async () => {
        if (!ofSubagents && (await rootOf(id)) !== id) return
        await tell(id, fields)
      }).catch(() => {})
    },
    dispose: async () => {
      await chain
    },
    "chat.message": async (input) => {
      if (input?.sessionID) pending.set(input.sessionID, "UserPromptSubmit")
    },
    "tool.execute.after": async (input) => {
      const id = input?.sessionID
      if (id && input.tool === "bash" && !pending.has(id)) pending.set(id, "PostToolUse")
    },
    "experimental.chat.system.transform": async (input, output) => {
      const id = input?.sessionID
      const system = output?.system
      if (!id || !Array.isArray(system)) return
      if (String(system[0] ?? "").startsWith(TITLE)) return
      const events = []
      if (!told.has(id)) {
        // New to this process (a new session, or one continued by a new opencode): its
        // requests hold nothing yet.
        told.set(id, "")
        events.push({ hook_event_name: "SessionStart", source: "startup" })
      }
      const name = pending.get(id)
      pending.delete(id)
      if (name) events.push({ hook_event_name: name })
      for (const fields of events) {
        const text = await serially(() => tell(id, fields))
        if (text) told.set(id, text)
      }
      const text = told.get(id)
      if (text) system.push(text)
    },
  }
}
