/* fuzz-mcp-server.c: the stdio framing, JSON-RPC parsing and dispatch, the MCP lifecycle and the
 * exec tool's argument validation, as the stdio transport drives them: the input is a byte stream
 * cut into lines by one McpLineReader and every line goes to one McpServer, so sequences
 * (initialize, then calls, cancellations, a second initialize) are explored. Every reply must be
 * one JSON-RPC line; every accepted call must respect the limits; its result encodes. */
#include <jansson.h>
#include <string.h>

#include "fuzz.h"
#include "mcp.h"

/* Small limits, so every validation branch is reachable with short inputs. */
static const McpLimits limits = {
        .default_timeout_s = 30,
        .max_timeout_s = 300,
        .max_code_bytes = 64,
        .max_stdin_bytes = 16,
        .max_output_bytes = 4096,
        .memory_max_bytes = 256u << 20,
        .pids_max = 128,
        .cpu_quota_percent = 100,
        .tmp_size_bytes = 64u << 20,
        .python_version = "3.11.2",
        .packages = "numpy",
        .limits_by = "rlimit",
};

#define FUZZ_MAX_LINE 1024
#define FUZZ_CHUNK 509 /* feed in pieces, so lines (and oversize lines) straddle reads */

static void check_reply(const char *reply) {
        FUZZ_CHECK(reply);
        FUZZ_CHECK(!strchr(reply, '\n'));
        json_error_t err;
        json_t *j = json_loads(reply, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
        FUZZ_CHECK(j);
        FUZZ_CHECK(json_is_object(j));
        json_t *v = json_object_get(j, "jsonrpc");
        FUZZ_CHECK(json_is_string(v) && strcmp(json_string_value(v), "2.0") == 0);
        FUZZ_CHECK(json_object_get(j, "result") || json_object_get(j, "error"));
        json_t *id = json_object_get(j, "id");
        FUZZ_CHECK(!id || json_is_string(id) || json_is_integer(id));
        json_decref(j);
}

static void handle_line(McpServer *s, const char *line, size_t len) {
        McpAction a;
        FUZZ_CHECK(mcp_server_handle(s, line, len, &a) == 0);
        switch (a.kind) {
        case MCP_ACTION_NONE:
                break;
        case MCP_ACTION_REPLY:
                check_reply(a.reply);
                FUZZ_CHECK(!a.is_initialize || mcp_server_protocol_version(s));
                break;
        case MCP_ACTION_CANCEL:
                FUZZ_CHECK(a.cancel_key);
                break;
        case MCP_ACTION_CALL: {
                const McpExecArgs *args = mcp_call_args(a.call);
                FUZZ_CHECK(mcp_server_protocol_version(s));
                FUZZ_CHECK(args->code && args->code_len > 0 && args->code_len <= limits.max_code_bytes);
                FUZZ_CHECK(!memchr(args->code, '\0', args->code_len));
                FUZZ_CHECK(args->stdin_len <= limits.max_stdin_bytes);
                FUZZ_CHECK(args->stdin_len == 0 || args->stdin_data);
                FUZZ_CHECK(args->timeout_s >= 1 && args->timeout_s <= limits.max_timeout_s);
                FUZZ_CHECK(mcp_call_id_key(a.call));
                /* Whatever the code was, its bytes as output (NULs, invalid UTF-8) must encode. */
                McpExecResult r = {
                        .stdout_data = args->code,
                        .stdout_len = args->code_len,
                        .stderr_data = args->stdin_data,
                        .stderr_len = args->stdin_len,
                        .exit_code = -9,
                        .signal = "SIGKILL",
                        .limits = "rlimit",
                };
                char *reply = mcp_call_reply_result(a.call, &r);
                check_reply(reply);
                free(reply);
                reply = mcp_call_reply_tool_error(a.call, "the run queue is full");
                check_reply(reply);
                free(reply);
                break;
        }
        }
        mcp_action_done(&a);
}

/* A session's only state is whether it was initialized; an uninitialized server is reused across
 * inputs (building one costs more than most inputs), an initialized one is replaced, so every
 * input starts from a fresh session and a crash reproduces from its input alone. */
static McpServer *server;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (server && mcp_server_protocol_version(server))
                server = mcp_server_free(server);
        if (!server)
                server = mcp_server_new(&limits, "0.0.0-fuzz");
        McpServer *s = server;
        FUZZ_CHECK(s);
        McpLineReader lr;
        mcp_line_reader_init(&lr, FUZZ_MAX_LINE);

        const char *line;
        size_t len;
        McpLineStatus st;
        for (size_t off = 0; off < size; off += FUZZ_CHUNK) {
                size_t n = size - off < FUZZ_CHUNK ? size - off : FUZZ_CHUNK;
                FUZZ_CHECK(mcp_line_reader_feed(&lr, (const char *) data + off, n) == 0);
                while ((st = mcp_line_reader_next(&lr, &line, &len)) != MCP_LINE_NONE) {
                        if (st == MCP_LINE_OK) {
                                FUZZ_CHECK(len <= FUZZ_MAX_LINE);
                                handle_line(s, line, len);
                        }
                }
                /* Memory stays bounded whatever the stream: what is kept is at most one line. */
                FUZZ_CHECK(lr.len - lr.start <= FUZZ_MAX_LINE);
        }
        while ((st = mcp_line_reader_finish(&lr, &line, &len)) != MCP_LINE_NONE)
                if (st == MCP_LINE_OK)
                        handle_line(s, line, len);

        /* The oversize-line error is well-formed too. */
        if (size > 0 && data[0] == '!') {
                char *reply = mcp_error_reply_new(MCP_ERROR_INVALID_REQUEST, "message too long");
                check_reply(reply);
                free(reply);
        }
        mcp_line_reader_done(&lr);
        return 0;
}
