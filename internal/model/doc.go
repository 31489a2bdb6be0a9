// Package model puts every model provider behind one streaming interface:
// a Request in, a stream of Deltas out, a Response at the end.
//
// # Providers
//
// A Provider streams one model call and does not retry; the agent owns
// retries and decides from the *Error it gets (IsRetryable). Three HTTP
// dialects exist: the OpenAI Responses API (APIOpenAIResponses), OpenAI
// Chat Completions (APIOpenAIChat, also spoken by Ollama, vLLM, llama.cpp
// and LM Studio) and Anthropic Messages (APIAnthropic). The built-in
// offline model (APIOffline) needs no network at all.
//
// # The offline model
//
// Offline, catalog id e/offline, is deterministic and instant unless told
// otherwise. It is for client authors and tests: it can be driven to
// produce every event of a turn. It reads directives, one per line, from
// the newest user message that has text. Leading and trailing whitespace
// of a line is ignored; a directive is the line's first word.
//
//	/text WORDS         reply with WORDS, one text delta per word; a delta carries
//	                    the whitespace before its word, so the deltas join to WORDS
//	/think WORDS        reasoning, streamed first, kept as a reasoning part
//	/tool NAME JSON     a tool call with JSON (an object) as arguments; several
//	                    lines form one batch, in order; stop reason tool_use
//	/long N             stream "w1 w2 … wN" as text, one delta per word (N ≤ 1000000)
//	/delay MS           wait MS milliseconds before each delta of this call, and
//	                    before its failure (MS ≤ 3600000); cancelling ctx stops the wait
//	/error KIND [MSG]   fail this call, after its other deltas have streamed:
//	                      retryable   only on the first attempt (Request.Attempt 0), so a
//	                                  retry recovers and then streams the rest of the segment
//	                      persistent  on every attempt, so retries exhaust
//	                      fatal       on every attempt, not retryable
//	/usage I O CR W5 W1 report this usage: input, output, cache read,
//	                    5-minute and 1-hour cache writes
//	/then               end this call's segment; the next lines drive the next call
//
// The call index within the turn is the number of assistant messages after
// the prompt; segment i drives call i, and every call past the last
// segment answers "done.", so a turn always ends. A segment without
// content answers an empty message.
//
// Within a call the deltas come in this order: reasoning, text, then two
// fragments per tool call, split at the middle of the arguments (on a rune
// boundary). Several /think lines, or several /text and /long lines, are
// joined with a newline. Tool call ids are call_SEGMENT_N, both counted
// from 0.
//
// An /error fails with *Error{Provider: "e", Model: "e/offline", Stage:
// "stream"}: retryable and persistent with Type "offline_retryable",
// Status 503, Retryable true; fatal with Type "offline_fatal", Status 400.
// MSG defaults to "simulated KIND error".
//
// When any line is a directive, the other lines are ignored. A directive
// with bad arguments (e.g. "/tool x {bad", "/long 0", a second /delay,
// /error or /usage in one segment) fails every call of the turn with a
// fatal *Error of Type "offline_directive", Stage "request", Status 400,
// whose Message is
//
//	malformed directive on line N "LINE": WHY
//
// A word that merely starts with a slash (/foo, /texts) is plain text.
// A prompt without directives is answered with
//
//	e/offline: received N words: "FIRST"
//
// where N counts the words of the prompt (runs of non-space) and FIRST is
// the prompt with each run of whitespace turned into one space, cut to its
// first 60 characters, unquoted and unescaped.
//
// The agent's compaction request, recognised by a System prompt starting
// with "Summarize", is answered with
//
//	Summary of N messages: TEXT
//
// where N counts the request's messages and TEXT is the first 200
// characters of the text of its user messages, whitespace collapsed as
// above (so the summary holds no directive lines). Directives are not
// followed in a compaction request.
//
// Without /usage, usage is Input = 100 for the system prompt whatever it
// says, plus one per word (run of non-space characters) of every part's
// text and every tool call's arguments, at least 1, so that the counts do
// not depend on the machine, the date or the temp dir; Output = the text and reasoning words streamed plus one per
// tool call; no cache tokens.
//
// With an output schema (Request.OutputSchema), a call whose directives
// give it no text, tool call or failure (a prompt without directives, a
// segment without them, a call past the last segment) answers with a
// minimal value of the schema instead: an object of its required
// properties, arrays of their minItems, strings of their minLength,
// numbers at their minimum, an enum's first value. A user message starting
// with CorrectionPrefix (the agent's corrective call) is not a prompt: the
// directives stay the prompt's before it, and its call takes the next
// segment, so "/text not json" /then "/text still not json" answers the
// corrective call with the second text.
//
// The offline model ignores tools offered and effort: it calls whatever
// tool its directives name, so clients can test unknown tools too.
//
// # Catalog
//
// A Catalog lists the models (models.list), picks the default one,
// validates model and effort, and builds providers. Model ids are
// "provider/name"; the name may itself contain slashes (a model
// "qwen/qwq" of provider "local" is "local/qwen/qwq"). Lookup also takes a
// bare name that exactly one model has ("gpt-5.5", "offline"); the Info it
// returns carries the full ID. Request.Model is the Info's Name.
//
// Built in: e/offline; openai (base https://api.openai.com/v1, key
// OPENAI_API_KEY, Responses API) with gpt-5.5, gpt-5.5-mini and gpt-4.1;
// anthropic (base https://api.anthropic.com, key ANTHROPIC_API_KEY) with
// claude-sonnet-4-5, claude-opus-4-1 and claude-haiku-4-5. Prices are USD
// per million tokens of each usage category, list prices when written, and
// may be stale; Info.Cost is nil for a model without a price. The offline
// model's price is zero, so its cost is 0, not unknown.
//
// Settings add providers ("providers" in settings.json, see
// ParseProviders): each needs api, base_url and at least one model;
// api_key_env is optional (local servers need no key); unknown fields are
// errors. A model's context_window defaults to 128000; every configured
// model supports tools. A provider named "openai" or "anthropic" overrides
// the built-in one: its non-empty api, base_url and api_key_env replace the
// built-in values, and its models add to the built-in ones or replace them
// by id. The name "e" is reserved.
//
// Default picks the configured default model; else the default model of
// the first built-in provider whose key variable is set (openai/gpt-5.5
// for OpenAI, then anthropic/claude-sonnet-4-5); else e/offline, with the
// warning "no model provider configured: using the built-in offline model
// e/offline". An unknown configured default is not fatal: Default falls
// back as above and says so in its warning.
//
// Effort: "" selects the model's default effort ("medium" when the model
// has it, else its first level). A model with no effort levels (e.g.
// openai/gpt-4.1) accepts only "", resolved to "". The offline model has
// low, medium and high (default medium) so effort handling can be tested
// offline.
package model
