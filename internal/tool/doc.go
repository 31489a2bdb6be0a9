// Package tool implements e's built-in tools: bash, edit, find, grep, ls,
// read, sleep and write. It knows nothing of sessions or the wire: the agent
// offers [Builtins] to the model, describes calls with [Describe] and [Paths],
// and runs them with [Run].
//
// # Arguments
//
// Each tool's arguments are a JSON object described by a JSON Schema (draft
// 2020-12) in [Spec.Parameters]. [Run] checks the arguments against it before
// anything runs: every type is strict (an integer is a JSON number with an
// integral value; "5" is not one), required strings that name something must
// not be empty, integers have ranges. An optional argument that is omitted or
// null takes its default. Unknown fields are ignored. A violation fails the
// call with one line naming the tool and the argument, e.g.
// "sleep: ms: must be between 1 and 3600000, got 0".
//
// # Results
//
// A [Result] is exactly one of: success, Failed (bad arguments, missing file,
// non-zero exit, timeout, ...) or Stopped (the context was cancelled: an
// interrupt, or a steer ending a sleep). Content is what the model sees;
// Summary is one short line for people. Elapsed is measured by [Run].
//
// # Paths and the session directory
//
// Paths are relative to [Env.Cwd] or absolute. read, write, edit, ls, find
// and grep refuse a path whose real location is outside the session directory:
// they open the session directory as an [os.Root] and resolve and open the
// path beneath it in one step, following symbolic links only while they stay
// inside (".." applies after the link before it, as the kernel does). There is
// no check followed by a second open, so a directory swapped for a link while
// a call runs cannot lead it out; read and edit check the open file itself
// (regular, not a directory) and edit rewrites that same file. Every path,
// relative or absolute, is first mapped to a name beneath the real session
// directory, so an absolute link inside it that points inside it is followed
// (spec/engine.md §12). Every open is non-blocking and checked on the open
// file (package regfile): read, edit, write and grep of a FIFO, device or
// socket fail at once naming it, ls and find list it (Y1). find and grep walk
// through an os.Root of their root and do not follow links below it (grep
// skips them, and special files). The refusal reads
// "read: ../x: outside the session directory /real/cwd". bash is not
// restricted: it is a shell.
//
// [Describe] reports the path as given ("." when ls, find or grep omit it) or
// bash's command; [Paths] reports the real absolute path, for ordering calls
// that name the same file (L3).
//
// # read
//
// read {path, offset?, limit?} returns the file's lines exactly as stored,
// without line numbers, so text can be copied into edit's old unchanged.
// offset counts lines from 1 (default 1); limit defaults to 2000 lines. At
// most 256 KiB are returned; when lines remain, a last line in brackets gives
// the offset to continue from, and a single longer line is cut with a note.
// A file with a NUL byte in its first 8000 bytes is refused as binary;
// directories and special files are refused. An empty file reads
// "(empty file)". Summary: "N lines".
//
// # write
//
// write {path, content} replaces or creates the file, creating missing parent
// directories (0755). A new file gets mode 0644; an existing one keeps its
// mode. Summary: "wrote N bytes".
//
// # edit
//
// edit {path, old, new, all?} replaces text that matches old byte for byte.
// It fails, naming the file, when old is not found, when it matches more than
// once and all is not true, and when old equals new. Summary:
// "N replacements". Files over 16 MiB are refused.
//
// # ls, find, grep
//
// ls {path?} lists a directory sorted by name, directories with a trailing
// "/", symbolic links with "@"; at most 1000 entries.
//
// find {pattern, path?} walks the tree (not following links, skipping .git)
// and prints matching paths, directories with a trailing "/", named as the
// path argument plus the relative path (so "." gives "a/b.go"). A pattern
// without "/" is a glob matched against each name; with "/" it is matched
// against the slash-separated path relative to the root, "*" not crossing "/".
// At most 1000 results.
//
// grep {pattern, path?, glob?} searches with a Go (RE2) regular expression
// and prints "file:line:text" per matching line, line numbers from 1, lines
// cut at 500 bytes. glob filters file names. .git, links, binary files and
// files over 16 MiB are skipped. At most 1000 matches or 64 KiB. No match is
// not a failure: Content is "no matches".
//
// # bash
//
// bash {command, timeout_ms?} runs /bin/bash -c command in Env.Cwd with stdin
// from /dev/null, in a process group of its own. stdout and stderr share one
// pipe; chunks go to [Env.Output] as they arrive (a UTF-8 sequence split
// between reads is held back until complete; all calls of Output happen
// before Run returns, from one goroutine). Content is the last 64 KiB of the
// output (with a note when the start was dropped) followed by a status line:
// "[exit N]", "[killed by SIGKILL]", "[timed out after N ms: the command was
// killed]" or "[stopped: the command was killed]". A non-zero exit fails the
// call. timeout_ms defaults to 120000 and is at most 600000.
//
// Every process a call starts carries the environment variable
// E_TOOL_CALL_<tracker id>=<call id>, found by scanning /proc/*/environ.
// [NewProcs] makes e a child subreaper (PR_SET_CHILD_SUBREAPER), so a process
// whose parent exits re-parents to e, not to PID 1. On timeout or
// cancellation the call's process group is killed, then every live process
// carrying the call's marker (setsid, nohup and disowned jobs included), every
// process below one of those (env -i, or caught inside execve with an empty
// environ), and every orphan e adopted since the call started, with what is
// below it ((env -i setsid cmd &), a daemon's double fork with a cleared
// environment), scanning again until none is left; a cancelled call returns
// within milliseconds. An adopted orphan cannot be told from another call's:
// it is killed with every call that was running when it started. A call that
// ends normally leaves its background jobs running (a server for later
// calls); output is collected for 250 ms after the shell exits, then the pipe
// is closed, so background jobs must redirect their output. [Procs.KillAll]
// kills every running group, every marked process of the tracker and every
// adopted orphan, and refuses later bash calls: it is for shutdown (D1, D2).
// Use [NewProcs]: the zero Procs is not usable. Nested e processes add their
// own marker variable, so the outer one kills theirs too. Killed processes
// re-parented to e are reaped, and so are adopted orphans that exit by
// themselves (after each call and in KillAll). No cgroup is used yet: the
// subreaper needs no privilege and no writable cgroup tree.
//
// # sleep
//
// sleep {ms} waits 1 to 3600000 ms (category "wait"). Cancelling the context
// returns at once with Stopped and Content "stopped after N ms"; otherwise
// Content is "slept N ms".
package tool
