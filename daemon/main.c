/* main.c: mcp-execd's entry point: the command line, the configuration, and one daemon object
 * (daemon.h) made, run and freed. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "daemon.h"
#include "http-transport.h"
#include "log.h"
#include "project-config.h"
#include "pyexec.h"

static void help(void) {
        printf("Usage: %s [OPTIONS]\n"
               "\n"
               "MCP server whose exec tool runs Python in a fresh, network-less sandbox and returns its\n"
               "output, exit status and resource use. Speaks MCP over stdio (newline-delimited JSON-RPC).\n"
               "\n"
               "Options:\n"
               "  -h --help       Show this help and exit\n"
               "     --version    Show the version and exit\n"
               "\n"
               "Configuration comes from the environment (see README.md or mcp-execd(8)):\n",
               program_invocation_short_name);
        config_print_help(stdout);
}

static int parse_argv(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, 'V' },
                {},
        };
        int c;
        opterr = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case 'V':
                        printf("%s %s\n", PROJECT_NAME, PROJECT_VERSION);
                        return 0;
                default:
                        fprintf(stderr, "%s: unknown option '%s'; see --help\n", program_invocation_short_name,
                                argv[optind - 1]);
                        return -EINVAL;
                }
        if (optind < argc) {
                fprintf(stderr, "%s: unexpected argument '%s'; see --help\n", program_invocation_short_name,
                        argv[optind]);
                return -EINVAL;
        }
        return 1;
}

static void warn_unknown_variables(void) {
        extern char **environ;
        config_warn_unknown(environ);
}

int main(int argc, char **argv) {
        int r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? 2 : 0;

        if (getenv("MCP_EXECD_DEBUG"))
                log_max_level = LOG_DEBUG;

        _cleanup_(config_done) Config cfg = {};
        _cleanup_free_ char *problem = NULL;
        r = config_load(getenv, &cfg, &problem);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", program_invocation_short_name, problem ? problem : strerror(-r));
                return 2;
        }
        warn_unknown_variables();
        if (cfg.transport != TRANSPORT_STDIO && http_check_exposure(&cfg) < 0)
                return 2;
        /* A configured source the installer cannot read is a configuration error, like a bad value. */
        if (pyexec_sources_check(&cfg) < 0)
                return 2;

        /* Freed before cfg, which it points to. */
        _cleanup_(daemon_freep) Daemon *d = NULL;
        r = daemon_new(&cfg, &d);
        if (r < 0)
                /* MCP_EXEC_PRELOAD naming a module that does not import: a bad value, as above. */
                return r == -ENOPKG ? 2 : 1;
        /* A loop that failed is logged and ends like a stop; the exit status stays 0, as it always was.
         * A start whose checks failed (the sandbox, the probe) exits 1, as it did when they ran
         * before anything was served; a preload that does not import, 2. */
        r = daemon_run(d);
        return r == -ENOPKG ? 2 : r == -ENOTRECOVERABLE ? 1 : 0;
}
