/* mcp.h: the MCP server's protocol side: JSON-RPC 2.0 messages, lifecycle, the tool catalogue,
 * argument validation and result encoding. Transport-agnostic and I/O-free: callers feed whole
 * messages in and get serialized replies (or work to do) back. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "exec-result.h"
#include "mime.h"
#include "str-util.h"
#include "utf8.h"

/* jansson's value type, named here without its header: JSON crosses from mcp/ to the daemon and
 * back as values, never as text to be parsed again. */
struct json_t;

/* What the tools promise, taken from the configuration in force (so the description and the
 * validation say the truth). */
typedef struct McpLimits {
        uint32_t default_timeout_s;
        uint32_t max_timeout_s;
        uint64_t max_code_bytes;
        uint64_t max_stdin_bytes;
        uint64_t max_output_bytes;
        uint64_t memory_max_bytes; /* UINT64_MAX: unlimited */
        uint64_t pids_max;         /* UINT64_MAX: unlimited */
        uint32_t cpu_quota_percent; /* 0: unlimited */
        uint64_t tmp_size_bytes;
        const char *python_version; /* e.g. "3.11.2", or NULL if unknown */
        const char *packages;       /* importable third-party packages, e.g. "numpy, pandas", or NULL */
        const char *limits_by;      /* "cgroup" or "rlimit" */
        const char *pythons;        /* names of the configured interpreters, comma-separated, the default
                                     * first (MCP_EXEC_PYTHONS), or NULL */
        const char *sources;        /* where dependencies come from, a phrase for descriptions, or NULL
                                     * when no source is configured */
        uint64_t max_input_bytes;   /* the `files` argument, decoded, in total (MCP_EXEC_MAX_INPUT_BYTES) */
        uint64_t max_return_bytes;  /* outputs/ files returned, in total (MCP_EXEC_MAX_RETURN_BYTES) */
} McpLimits;

typedef struct McpServer McpServer;

/* Creates the protocol state of one session (one stdio connection, one HTTP session).
 * limits is copied (strings too). Returns NULL on ENOMEM. */
McpServer *mcp_server_new(const McpLimits *limits, const char *server_version);
McpServer *mcp_server_free(McpServer *s);
DEFINE_POINTER_CLEANUP(McpServer, mcp_server_free)

/* Until mcp_server_release(), tools/list and tools/call are not handled but held
 * (MCP_ACTION_HOLD): their answers depend on the interpreter probe, which a daemon may run after it
 * has answered initialize (issue 16.6). The transport keeps the message, and what follows it, and
 * hands it to mcp_server_handle() again once released; the answer is then exactly what it would
 * have been. initialize, ping, notifications and every error that depends on no probe are handled
 * at once. */
void mcp_server_hold(McpServer *s);
/* The start will not complete (a check failed, or the daemon was stopped during it): held
 * tools/list and tools/call are answered from now on, a call with a tool error whose text is why,
 * a list with a JSON-RPC internal error naming why. Returns 0 or -ENOMEM. */
int mcp_server_refuse(McpServer *s, const char *why);
/* What the probe found (McpLimits.python_version and .packages, NULL when unknown): the tool
 * descriptions are built again with it and nothing is held any more. Returns 0 or -ENOMEM (s is
 * then unchanged, still held). */
int mcp_server_release(McpServer *s, const char *python_version, const char *packages);

/* A fresh session with the same limits and version as s (one per HTTP session). NULL on ENOMEM. */
McpServer *mcp_server_new_like(const McpServer *s);

/* Who the session's requests come from (a tenant's name; "" for nobody in particular: stdio, an
 * HTTP daemon without authentication): each call made from now on carries it (mcp_call_principal()),
 * for what it may reach and for its records. The transport sets it from the request's credential.
 * Longer than MCP_PRINCIPAL_MAX: cut, which the transport's authentication never lets happen. */
#define MCP_PRINCIPAL_MAX 32
void mcp_server_set_principal(McpServer *s, const char *name);

/* Negotiated protocol version, or NULL before initialize. */
const char *mcp_server_protocol_version(const McpServer *s);

/* The tools, as the daemon runs them; each has one definition in the registry (tools.c). */
typedef enum McpTool {
        MCP_TOOL_EXEC,
        MCP_TOOL_EXECUTE_PYTHON,   /* code = script; dependencies; timeout_seconds → timeout_s */
        MCP_TOOL_VALIDATE_SCRIPT,  /* code = script; dependencies; nothing is run */
        MCP_TOOL_CHECK_ENVIRONMENT,
        MCP_TOOL_SESSION_OPEN,     /* a Python session (issue 18): python, dependencies, idle_timeout_s */
        MCP_TOOL_SESSION_CLOSE,    /* session */
        _MCP_TOOL_MAX,
} McpTool;

/* Bounds of the `files` argument; MCP_FILES_MAX × (MCP_FILE_NAME_MAX_BYTES + 1) fits the sandbox's
 * staging table (SANDBOX_STAGED_MAX names, 16 KiB of them) with the run's own two files. */
#define MCP_FILES_MAX 64
#define MCP_SESSION_HANDLE_MAX_BYTES 64 /* a Python session's handle as the tools accept it */
#define MCP_FILE_NAME_MAX_BYTES EXEC_FILE_NAME_MAX_BYTES
#define MCP_FILE_DEPTH_MAX 8
/* Validated arguments of a tools/call. Owned by the McpCall they belong to. */
typedef struct McpExecArgs {
        McpTool tool;
        const char *python;            /* interpreter name chosen by the caller, or NULL: the default */
        struct json_t *dependencies;   /* JSON array of requirement strings (validated), or NULL */
        const char *code;
        size_t code_len;
        const char *stdin_data; /* may contain NULs */
        size_t stdin_len;
        uint32_t timeout_s; /* applied value: defaulted, clamped */
        const char *session;     /* a Python session's handle (exec, execute_python, session_close), or NULL */
        uint32_t idle_timeout_s; /* session_open: 0 when absent (the daemon's MCP_EXEC_PY_SESSION_IDLE_S) */
        ExecInputFile *files; /* the `files` argument, or NULL; malloc'd, as is files_data */
        size_t n_files;
        char *files_data;
} McpExecArgs;

/* One accepted tools/call, waiting to be run. Opaque; owns the request id. */
typedef struct McpCall McpCall;

const McpExecArgs *mcp_call_args(const McpCall *c);
/* Its server's principal when it was made (mcp_server_set_principal()): never NULL, "" for none. */
const char *mcp_call_principal(const McpCall *c);
/* A canonical text form of the request id (its compact JSON), for matching cancellations. */
const char *mcp_call_id_key(const McpCall *c);
/* The call's _meta.progressToken as compact JSON (a string or an integer), or NULL if it asked for
 * no progress. */
const char *mcp_call_progress_token(const McpCall *c);
/* New output of a running call for its progress notification: valid UTF-8 (or NULL, 0). */
typedef struct McpProgressOutput {
        const char *stdout_data;
        size_t stdout_len;
        const char *stderr_data;
        size_t stderr_len;
        bool truncated; /* the cap stopped the streaming: nothing more will follow */
} McpProgressOutput;

/* A notifications/progress message for a call's progress token (token_json: the token as compact
 * JSON, from mcp_call_progress_token()); progress strictly increases by the caller's contract;
 * total 0 = omitted; out (or NULL) goes to params._meta["io.github.mcp-execd/output"] (progress.c
 * says why there). malloc'd, or NULL (no memory, a bad token, output not UTF-8). */
char *mcp_progress_new(const char *token_json, uint64_t progress, uint64_t total, const char *message,
                       const McpProgressOutput *out);

/* A load balancer that routes by the body (the fleet's HAProxy: a session handle in a call's
 * arguments) and read only its first read_bytes of body_bytes says so (HTTP: the header
 * MCP_LB_BODY_READ_HEADER); the transport records it here. It words an error, nothing more: a
 * client that forges it changes the text of its own answer. */
#define MCP_LB_BODY_READ_HEADER "Mcp-Execd-Lb-Body-Read"
void mcp_call_set_lb_body_read(McpCall *c, uint64_t read_bytes, uint64_t body_bytes);
/* Whether the load balancer read only part of the call's body: true with both figures. */
bool mcp_call_lb_body_partial(const McpCall *c, uint64_t *ret_read, uint64_t *ret_size);

/* W3C trace context (SEP-414; trace.c): a version-00 traceparent is exactly this long. */
#define MCP_TRACEPARENT_LEN 55
/* Whether s (n bytes) is a valid version-00 traceparent: 00-<32 hex>-<16 hex>-<2 hex>, lowercase,
 * neither id all zeros. Anything else is to be dropped, never passed on. */
bool mcp_traceparent_valid(const char *s, size_t n);
/* The call's traceparent (from _meta, else what the transport set), or NULL: for its journal
 * record, so operators can join a run to the agent's trace. Nothing else of the caller's is kept. */
const char *mcp_call_traceparent(const McpCall *c);
/* The transport's copy (HTTP: the W3C `traceparent` header): used if value (NUL-terminated, or
 * NULL) is valid and _meta gave none. */
void mcp_call_set_traceparent(McpCall *c, const char *value);
McpCall *mcp_call_free(McpCall *c);
DEFINE_POINTER_CLEANUP(McpCall, mcp_call_free)

/* Tasks (README "Tasks"): a tools/call may run as a task (2025-11-25: params.task; 2026-07-28: the
 * request declares the io.modelcontextprotocol/tasks extension), answered at once with the task,
 * its result fetched later. The store is the daemon's (daemon/task/); mcp/ only parses the requests
 * and writes the answers, from a view of the task. */
typedef enum McpTaskStatus {
        MCP_TASK_WORKING,
        MCP_TASK_COMPLETED,
        MCP_TASK_FAILED,
        MCP_TASK_CANCELLED,
} McpTaskStatus;

typedef struct McpTaskView {
        const char *id;
        McpTaskStatus status;
        uint64_t created_usec; /* CLOCK_REALTIME */
        uint64_t updated_usec; /* CLOCK_REALTIME */
        uint64_t ttl_msec;     /* how long the result is kept after the task ends */
        const char *reply;     /* MCP_TASK_COMPLETED: the call's own JSON-RPC reply (its result is shown) */
        uint64_t too_big;      /* MCP_TASK_FAILED: the result's bytes that max_bytes could not hold; 0: OOM */
        uint64_t max_bytes;    /* MCP_EXEC_TASKS_MAX_BYTES */
} McpTaskView;

/* Whether the call is to run as a task; *ret_ttl_msec is the TTL it asked for (2025 task.ttl), 0 for
 * none. */
bool mcp_call_is_task(const McpCall *c, uint64_t *ret_ttl_msec);
/* A task the server may answer inline instead (2026-07-28: the client declared the tasks extension,
 * and SEP-2663 lets the server decide); a 2025 call asked for its task with params.task. */
bool mcp_call_task_may_inline(const McpCall *c);
/* The immediate answer to a call that runs as a task (CreateTaskResult of its era). NULL on ENOMEM. */
char *mcp_call_reply_task_created(const McpCall *c, const McpTaskView *t);
/* A JSON-RPC error answering the call (the task could not be created: a bound, naming it). */
char *mcp_call_reply_error(const McpCall *c, int code, const char *message);

typedef enum McpTaskOp {
        MCP_TASK_GET,    /* tasks/get */
        MCP_TASK_RESULT, /* tasks/result (2025-11-25) */
        MCP_TASK_CANCEL, /* tasks/cancel */
        MCP_TASK_LIST,   /* tasks/list (2025-11-25) */
        MCP_TASK_UPDATE, /* tasks/update (2026-07-28; nothing of ours waits for input: acknowledged) */
} McpTaskOp;

/* A request about a task, to be answered from the store. Opaque; owns the request id. */
typedef struct McpTaskRequest McpTaskRequest;
McpTaskOp mcp_task_request_op(const McpTaskRequest *r);
/* Whether its answer shows a completed task's result (McpTaskView.reply is read): tasks/result, and
 * a 2026 tasks/get. The store keeps results compressed and opens one only for these. */
bool mcp_task_request_shows_result(const McpTaskRequest *r);
const char *mcp_task_request_task_id(const McpTaskRequest *r); /* NULL for LIST */
/* As mcp_call_id_key(): a tasks/result that waits can be cancelled by its request id. */
const char *mcp_task_request_id_key(const McpTaskRequest *r);
/* The answer. t: the task (after the operation: a cancelled task is shown cancelled), or NULL when
 * the caller has no task of that id (-32602). For CANCEL, was_terminal says the task had already
 * ended (2025: an error; 2026: the same acknowledgement). A RESULT of a working task is answered
 * only once it has ended (the caller waits: dispatch.c). NULL on ENOMEM. */
char *mcp_task_reply(const McpTaskRequest *r, const McpTaskView *t, bool was_terminal);
char *mcp_task_reply_list(const McpTaskRequest *r, const McpTaskView *tasks, size_t n);
/* The answer about a task id that bears another instance's tag (str_id_other_instance()): a load
 * balancer sent it here because that instance is down, so the task is gone (README "Fleet"). */
char *mcp_task_reply_other_instance(const McpTaskRequest *r, const char *tag);
/* Whether mcp_task_reply(r, t) tells the client how t ended: 2026 tasks/get of an ended task (the
 * result is inlined), 2025 tasks/result, 2025 tasks/get of a task that failed or was cancelled (it
 * has no result to fetch), and tasks/cancel in either era (the client ended it). */
bool mcp_task_reply_tells_end(const McpTaskRequest *r, const McpTaskView *t);
/* The answer when the one above could not be built: -32603 "out of memory", preformatted when the
 * request was parsed (issue 15). Hands it over once; NULL after that. */
char *mcp_task_reply_oom(McpTaskRequest *r);
McpTaskRequest *mcp_task_request_free(McpTaskRequest *r);
DEFINE_POINTER_CLEANUP(McpTaskRequest, mcp_task_request_free)

typedef enum McpActionKind {
        MCP_ACTION_NONE,     /* nothing to do (a notification, a response from the client) */
        MCP_ACTION_REPLY,    /* send reply */
        MCP_ACTION_CALL,     /* run call, then send mcp_call_reply_*() */
        MCP_ACTION_CANCEL,   /* cancel the call whose id key is cancel_key; send nothing */
        MCP_ACTION_HOLD,     /* nothing was done: hand the message in again after mcp_server_release() */
        MCP_ACTION_TASK,     /* answer task from the task store (mcp_task_reply()) */
} McpActionKind;

typedef struct McpAction {
        McpActionKind kind;
        char *reply;      /* REPLY: one serialized JSON-RPC message, no newline; malloc'd */
        McpCall *call;    /* CALL */
        char *cancel_key; /* CANCEL: malloc'd */
        McpTaskRequest *task; /* TASK */
        bool is_initialize; /* REPLY to a successful initialize (HTTP issues a session then) */
        bool is_tool_error; /* REPLY refusing a tools/call's arguments (isError: true): a rejected run */
        char traceparent[MCP_TRACEPARENT_LEN + 1]; /* that refused call's valid traceparent, or "" */
        bool is_modern;     /* the request named its protocol version in _meta (2026-07-28 era) */
        int rejected;       /* a 2026-07-28 REPLY refusing the request before any method ran (version,
                             * envelope, no such method): its JSON-RPC code, for HTTP's status; else 0 */
} McpAction;

void mcp_action_done(McpAction *a);

/* Handles one incoming message (the bytes of one stdio line or one HTTP body). Never fails on
 * bad input: a protocol error becomes a REPLY with a JSON-RPC error. Returns 0, or -ENOMEM. */
int mcp_server_handle(McpServer *s, const char *msg, size_t len, McpAction *ret);

/* Whether v is a protocol version whose requests stand alone (2026-07-28 and later) that we speak. */
bool mcp_protocol_version_is_modern(const char *v);

/* A JSON-RPC error reply that does not come from a message (e.g. an oversize line): id omitted. */
char *mcp_error_reply_new(int code, const char *message);

/* The JSON-RPC error codes we use (JSON-RPC 2.0 §5.1). */
enum {
        MCP_ERROR_PARSE = -32700,
        MCP_ERROR_INVALID_REQUEST = -32600,
        MCP_ERROR_METHOD_NOT_FOUND = -32601,
        MCP_ERROR_INVALID_PARAMS = -32602,
        MCP_ERROR_INTERNAL = -32603,
        /* 2026-07-28 (schema.mdx; renumbered from -32000.. in the final text). */
        MCP_ERROR_HEADER_MISMATCH = -32020,
        MCP_ERROR_MISSING_CAPABILITY = -32021, /* a method of an extension the request did not declare */
        MCP_ERROR_UNSUPPORTED_PROTOCOL_VERSION = -32022,
};

/* What rlimit mode cannot bound (no cgroup charges the run): the result's `unbounded`, empty
 * with a cgroup. Stable names, each explained in README ("Limits of rlimit mode"):
 * - memory_total: RLIMIT_AS bounds each process's address space, not their sum;
 * - memfd: memfd pages not mapped count against no rlimit (each memfd is at most /tmp's size,
 *   RLIMIT_FSIZE, and up to RLIMIT_NOFILE of them);
 * - kernel_memory: pipe and socket buffers, page tables and other kernel memory of the run;
 * - cpu_quota: MCP_EXEC_CPU_QUOTA is not applied (RLIMIT_CPU bounds each process's CPU time). */
#define MCP_RLIMIT_UNBOUNDED { "memory_total", "memfd", "kernel_memory", "cpu_quota" }

/* The reply to a call: a result, or a tool error (isError: true) with a message. malloc'd. A
 * result that cannot be encoded comes back as a tool error naming what failed ("mcp-execd could
 * not encode the result: …"); a message that is not UTF-8 is repaired. NULL only when even the
 * small fallback cannot be allocated: then mcp_call_reply_oom() is the answer (issue 15). */
char *mcp_call_reply_result(const McpCall *c, const ExecResult *r);
char *mcp_call_reply_tool_error(const McpCall *c, const char *message);
/* A result that is one JSON object (validate_script, check_environment): structuredContent and the
 * same JSON as text. object is borrowed. A tool error naming the failure if it cannot be encoded
 * (or is not a JSON object); NULL only on ENOMEM, as above. */
char *mcp_call_reply_structured(const McpCall *c, struct json_t *object);
/* The answer of last resort, preformatted when the call was parsed (so it needs no memory now): a
 * tool error "mcp-execd could not build the reply: out of memory" with the call's id. Hands it over
 * once; NULL after that. */
char *mcp_call_reply_oom(McpCall *c);

/* files.c, pure helpers also used by the daemon and the tests. */
/* An output file's name as the reply shows it (README "Files and figures"): every byte of what is
 * not valid UTF-8, of a C0 control, DEL or a C1 control (U+0080..U+009F), and '\\' itself, as
 * "\\xNN" (lowercase hex); the rest as it is. Injective, valid UTF-8, no control characters.
 * malloc'd, NULL on ENOMEM. */
char *mcp_file_name_display(const char *name);
/* NULL if name is an acceptable input file name, else a malloc'd reason quoting it (escaped). */
char *mcp_file_name_check(const char *name, size_t len);
/* RFC 4648 base64. Decoding skips whitespace, accepts missing padding, writes at most
 * mcp_base64_decoded_max(n) bytes to out; -EINVAL (and the offending offset) on a bad character. */
size_t mcp_base64_decoded_max(size_t n);
int mcp_base64_decode(const char *in, size_t n, char *out, size_t *ret_len, size_t *ret_bad);
char *mcp_base64_encode(const void *p, size_t n, size_t *ret_len);

/* Splits a byte stream into newline-terminated messages with a size cap (the stdio framing). */
typedef struct McpLineReader {
        Buf buf;
        size_t start; /* first byte of buf not yet returned */
        size_t max_line;
        bool discarding; /* inside a line that exceeded max_line */
} McpLineReader;

typedef enum McpLineStatus {
        MCP_LINE_NONE,     /* no complete line buffered */
        MCP_LINE_OK,       /* *ret_line and *ret_len hold one line without its "\n" (and a trailing "\r") */
        MCP_LINE_OVERSIZE, /* a line longer than max_line was dropped */
} McpLineStatus;

void mcp_line_reader_init(McpLineReader *r, size_t max_line);
void mcp_line_reader_done(McpLineReader *r);
/* Appends bytes. Returns 0 or -ENOMEM. */
int mcp_line_reader_feed(McpLineReader *r, const char *p, size_t n);
/* Takes the next line; the pointer stays valid until the next feed/next call. */
McpLineStatus mcp_line_reader_next(McpLineReader *r, const char **ret_line, size_t *ret_len);
/* At EOF: returns the unterminated rest as a last line, if any. */
McpLineStatus mcp_line_reader_finish(McpLineReader *r, const char **ret_line, size_t *ret_len);
