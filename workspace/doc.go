// Package workspace stores every tool result of an agent whole, as an
// artifact with metadata, and reads it back by id, by lines, by grep and by
// metadata query: the part that makes offloading large tool results safe
// (SPEC §5, seed 003).
//
// # Offloading
//
// A Workspace is one namespace of a Store, with the identity of the agent,
// task and session that write to it. Before each model request, pass the
// history through Offload:
//
//	store, err := dirstore.Open(".agentctx", dirstore.Options{})
//	...
//	ws := workspace.New(store, workspace.Options{SessionID: "s1", TaskID: "t1", AgentID: "coder"})
//	res, err := ws.Offload(ctx, msgs)
//	// send res.Messages
//
// Every tool result (a tool_result block or a role "tool" message) is
// stored whole as the artifact "tool_result_<tool_call_id>" with the
// metadata context_type = "tool_result", biz_id = the tool call id,
// agent_id, task_id, session_id, tool_name and action_name, plus its created
// time and sizes. A result of fewer than 40,000 characters stays in the
// context as it is; a larger one is replaced by a <knowledge_list> entry
// with the artifact id, the tool name, the size, a short head and tail
// preview, and the names of the tools that read it back. The size is that
// of the text the model reads (InlineChars): the characters of a string,
// or of the texts of text blocks joined by newlines (other blocks count as
// their JSON), not of the JSON that carries them. A read of the
// workspace's own content (a read-back tool, or the agent's file tool on
// an artifact's content file: ReadsBack) is stored but never replaced, so
// reading back never loops on a new reference; each read is one page,
// bounded by the reading tool. So is a read of a file the client saved a
// long output to, whose path an earlier result's preview named
// (SavedPaths, NamesSavedPath, ToolCall.ReadsSaved: Claude Code, opencode,
// Kilo and Qwen Code keep long output so). Offload never
// modifies its input, and offloading the same history again writes nothing
// new. OffloadToolResult does the same for one result as it arrives.
//
// # Reading back
//
// GetKnowledgeByID, GetKnowledgeByLines, GrepKnowledge, GrepSession,
// QueryArtifacts and ToolResultOffloadInfo return the text a model reads.
// Every read is capped (Options.MaxChars, 40,000 characters by default):
// under the cap it is exactly the content; over it, the first part and a
// notice naming the call that reads on. Get and Query return the artifacts
// themselves, uncapped.
//
// # Sessions, and what a read may reach
//
// Every session's artifacts live in the Workspace's namespace itself, with
// session_id in their metadata. An id is never overwritten with other
// content: the same tool call id with other content, in this session or
// another, is stored as tool_result_<id>-2 (-3, ...), and the reference
// names that id. So the id a model was given names one artifact of the
// namespace, and every reader of the namespace (a Workspace with any or no
// SessionID, the MCP server, the CLI) resolves it without knowing the
// session. The listings (GrepSession, QueryArtifacts,
// ToolResultOffloadInfo) cover every session, or the Workspace's SessionID
// by default when it has one; a call may name a session to filter by.
//
// What a read may reach is the namespace: every artifact in it, whoever
// stored it, and nothing in another namespace. A store shared by parties
// that must not read each other's results gives each a namespace of its
// own. (Versions before this layout kept a session's artifacts in
// SessionNamespace(namespace, session); a Workspace with that SessionID
// still reads them by id.)
//
// # Agent tools
//
// Tools returns the same reads as tool definitions (name, description,
// JSON Schema) for the Anthropic Messages API (marshal them as they are)
// or OpenAI Chat Completions (ToolDefinition.OpenAI); Execute runs a call
// and returns the text for the model, with a clear error message for bad
// arguments:
//
//	text, err := ws.Execute(ctx, call.Name, call.Input)
//	// answer the call with text; is_error = err != nil
//
// # Stores
//
// Store is a small interface (Put, Create, Get, Stat, Query, Delete,
// Close) whose contract every backend proves by running the storetest
// conformance suite (and, for the backends processes share, its
// RunProcesses): Put replaces, Create never does (ErrExists), atomically
// across processes, which is how racing writers of one tool result id
// each keep their own artifact.
//
// dirstore keeps plain files in a directory (the embedded default,
// readable with ls and cat), sqlitestore keeps an indexed SQLite file
// (pure Go) with a trigram index that speeds up grep over many artifacts,
// pgstore keeps a PostgreSQL database that a fleet of agents or proxies
// shares, and memstore keeps memory for tests. Namespaces keep workspaces
// apart within one store; sessions share theirs.
//
// A backend is a driver (driver.Store in package workspace/driver: the
// I/O only) under the portable Store NewStore makes of it, which checks
// ctx, namespaces, ids and artifacts, measures what is stored, refuses
// calls after Close, bounds each call and wraps errors, once for every
// backend; each backend's Open returns that Store. What backends share
// besides (the types, the line reader, the grep engine) is in
// workspace/driver too, out of this API.
//
// Lines and Grep work over any Store (with Get and Query); a backend that
// can do better implements the optional LineReader or Searcher interface
// and is used through the same functions, as io.Copy uses an io.WriterTo.
// Stat describes an artifact (sizes, SHA-256) without reading its content.
// Locator and Pather name the other optional abilities: saying where the
// data is kept, and giving each artifact's content file.
package workspace
