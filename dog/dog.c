// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog: command dispatch, global options, usage and help (dog.md §1).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include "dog.h"
#include "util.h"

#define PROGRAM_NAME "dog"

char sdhost[INET6_ADDRSTRLEN + 1] = "127.0.0.1";
int sdport = SD_LISTEN_PORT;
bool raw_output;
bool verbose;
uint32_t sd_epoch;
struct sd_node *sd_nodes;
int sd_nodes_nr;
uint16_t sd_cluster_flags;

static bool show_time;

static const struct command *commands[] = {
	&vdi_command,
	&node_command,
	&cluster_command,
	&benchmark_command,
	&s3_command,
};

static const struct sd_option global_options[] = {
	{ 'a', "address", true, "address",
	  "address of the sheep to talk to (default 127.0.0.1)" },
	{ 'p', "port", true, "port",
	  "port of the sheep to talk to (default 7000)" },
	{ 'r', "raw", false, NULL,
	  "raw output: no headers, sizes in bytes, times in seconds" },
	{ 'v', "verbose", false, NULL, "print more information" },
	{ 'h', "help", false, NULL, "show this help and exit" },
	{ 'T', "time", false, NULL, "print the elapsed time at the end" },
	{ 0, NULL, false, NULL, NULL },
};

static const struct sd_option *find_option(const struct command *cmd,
					   int ch)
{
	const struct sd_option *o;

	for (o = cmd->options; o && o->ch; o++)
		if (o->ch == ch)
			return o;
	for (o = global_options; o->ch; o++)
		if (o->ch == ch)
			return o;
	return NULL;
}

static void usage_hint(void)
{
	fprintf(stderr, "Run '%s --help' to list the available commands.\n",
		PROGRAM_NAME);
}

static void general_help(void)
{
	printf("Kelpie administration tool %s (Sheepdog compatible)\n"
	       "Usage: %s <command> <subcommand> [options] [arguments]\n\n"
	       "Available commands:\n", KELPIE_VERSION, PROGRAM_NAME);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		const struct subcommand *s;

		for (s = commands[i]->sub; s->name; s++) {
			char both[64];

			snprintf(both, sizeof(both), "%s %s",
				 commands[i]->name, s->name);
			printf("  %-24s%s\n", both, s->desc);
		}
	}
	printf("\nRun '%s <command> <subcommand> --help' for the options "
	       "of a command.\n", PROGRAM_NAME);
}

static void list_subcommands(FILE *f, const char *prefix,
			     const struct subcommand *sub)
{
	fprintf(f, "Available %s commands:\n", prefix);
	for (; sub->name; sub++)
		fprintf(f, "  %-24s%s\n", sub->name, sub->desc);
}

/*
 * "Usage: dog <cmd> <sub> [{subsub|...}] [-x] [-y arg] ... <args>" and
 * the option list.
 */
static void subcommand_usage(FILE *f, const struct command *cmd,
			     const struct subcommand *sub,
			     const struct subcommand *subsub)
{
	const char *opts = sub->opts;
	const struct subcommand *s;

	fprintf(f, "Usage: %s %s %s", PROGRAM_NAME, cmd->name, sub->name);
	if (subsub) {
		fprintf(f, " %s", subsub->name);
	} else if (sub->sub) {
		fprintf(f, " %s", sub->fn ? "[{" : "{");
		for (s = sub->sub; s->name; s++)
			fprintf(f, "%s%s", s == sub->sub ? "" : "|", s->name);
		fprintf(f, "%s", sub->fn ? "}]" : "}");
	}
	for (const char *c = opts; *c; c++) {
		const struct sd_option *o = find_option(cmd, *c);

		if (!o)
			continue;
		if (o->has_arg)
			fprintf(f, " [-%c %s]", o->ch, o->arg);
		else
			fprintf(f, " [-%c]", o->ch);
	}
	if (subsub && subsub->arg)
		fprintf(f, " %s", subsub->arg);
	else if (!subsub && sub->arg)
		fprintf(f, " %s", sub->arg);
	fprintf(f, "\nOptions:\n");
	for (const char *c = opts; *c; c++) {
		const struct sd_option *o = find_option(cmd, *c);

		if (o)
			fprintf(f, "  -%c, --%-18s %s\n", o->ch, o->name,
				o->desc);
	}
}

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

static const struct subcommand *find_sub(const struct subcommand *sub,
					 const char *name)
{
	for (; sub && sub->name; sub++)
		if (!strcmp(sub->name, name))
			return sub;
	return NULL;
}

/* -a: resolve to a numeric address */
static int set_address(const char *s)
{
	struct addrinfo hints = { 0 }, *res;
	const void *a;

	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(s, NULL, &hints, &res)) {
		fprintf(stderr, "Invalid ip address %s\n", s);
		return EXIT_FAILURE;
	}
	if (res->ai_family == AF_INET6)
		a = &((struct sockaddr_in6 *)res->ai_addr)->sin6_addr;
	else
		a = &((struct sockaddr_in *)res->ai_addr)->sin_addr;
	inet_ntop(res->ai_family, a, sdhost, sizeof(sdhost));
	freeaddrinfo(res);
	return 0;
}

/* -p: 1..65535, digits only */
static int set_port(const char *s)
{
	long v;

	if (!*s || strlen(s) > 5)
		goto bad;
	for (const char *c = s; *c; c++)
		if (!isdigit((unsigned char)*c))
			goto bad;
	v = strtol(s, NULL, 10);
	if (v < 1 || v > 65535)
		goto bad;
	sdport = (int)v;
	return 0;
bad:
	fprintf(stderr, "Invalid port number '%s'\n", s);
	return EXIT_USAGE;
}

static int global_option(int ch, const char *arg, bool *help)
{
	switch (ch) {
	case 'a':
		return set_address(arg);
	case 'p':
		return set_port(arg);
	case 'r':
		raw_output = true;
		break;
	case 'v':
		verbose = true;
		break;
	case 'h':
		*help = true;
		break;
	case 'T':
		show_time = true;
		break;
	}
	return 0;
}

/* SHEEPDOG_DOG_LOG: record every invocation (dog.md §1.1) */
static void log_invocation(int argc, char **argv)
{
	const char *path = getenv("SHEEPDOG_DOG_LOG_PATH");
	char line[4096], ts[64];
	size_t n = 0;
	time_t now;
	struct tm tm;
	FILE *f;

	if (!getenv("SHEEPDOG_DOG_LOG"))
		return;
	line[0] = 0;
	for (int i = 0; i < argc && n < sizeof(line) - 1; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s",
				      argv[i]);
	if (!path) {
		openlog(PROGRAM_NAME, LOG_PID, LOG_USER);
		syslog(LOG_INFO, "%s", line);
		closelog();
		return;
	}
	now = time(NULL);
	localtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y %b %d %H:%M:%S", &tm);
	f = fopen(path, "a");
	if (!f)
		return;
	fprintf(f, "%s : %s\n", ts, line);
	fclose(f);
}

static int init_defaults(void)
{
	const char *addr = getenv("SHEEPDOG_DOG_ADDR");
	const char *port = getenv("SHEEPDOG_DOG_PORT");
	int ret;

	if (addr) {
		ret = set_address(addr);
		if (ret)
			return ret;
	}
	if (port)
		return set_port(port);
	return 0;
}

struct parsed {
	const struct command *cmd;
	const struct subcommand *sub;
	const struct subcommand *subsub;
	int argc;
	char **argv;
	bool help;
};

static bool is_command_option(const struct command *cmd, int ch)
{
	for (const struct sd_option *o = cmd->options; o && o->ch; o++)
		if (o->ch == ch)
			return true;
	return false;
}

static void build_options(const struct command *cmd, const char *opts,
			 char *shortopts, struct option *longopts)
{
	size_t n = 0, k = 0;

	shortopts[n++] = ':';	/* report a missing argument as ':' */
	for (const char *c = opts; *c; c++) {
		const struct sd_option *o = find_option(cmd, *c);

		if (!o)
			continue;
		shortopts[n++] = (char)o->ch;
		if (o->has_arg)
			shortopts[n++] = ':';
		longopts[k].name = o->name;
		longopts[k].has_arg = o->has_arg ? required_argument :
				      no_argument;
		longopts[k].flag = NULL;
		longopts[k].val = o->ch;
		k++;
	}
	shortopts[n] = 0;
	memset(&longopts[k], 0, sizeof(longopts[k]));
}

static void bad_option(int ch, const char *arg)
{
	if (ch == ':')
		fprintf(stderr, "Option '%s' requires an argument\n", arg);
	else if (optopt)
		fprintf(stderr, "Invalid option '-%c'\n", optopt);
	else
		fprintf(stderr, "Invalid option '%s'\n", arg);
	usage_hint();
}

static int parse_options(struct parsed *p, int argc, char **argv)
{
	char shortopts[128];
	struct option longopts[64];
	int ch, ret;

	build_options(p->cmd, p->sub->opts, shortopts, longopts);
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shortopts, longopts,
				 NULL)) >= 0) {
		if (ch == '?' || ch == ':') {
			bad_option(ch, argv[optind - 1]);
			return EXIT_USAGE;
		}
		if (is_command_option(p->cmd, ch))
			ret = p->cmd->parser(ch, optarg);
		else
			ret = global_option(ch, optarg, &p->help);
		if (ret)
			return ret;
	}
	p->argc = argc - optind;
	p->argv = argv + optind;
	return 0;
}

/* pick the sub-subcommand from the first positional argument */
static int select_subsub(struct parsed *p)
{
	const struct subcommand *ss;

	if (!p->sub->sub)
		return 0;
	ss = p->argc ? find_sub(p->sub->sub, p->argv[0]) : NULL;
	if (ss) {
		p->subsub = ss;
		p->argc--;
		p->argv++;
		return 0;
	}
	if (p->sub->fn)
		return 0;
	if (p->help)
		return 0;
	if (p->argc) {
		char prefix[64];

		fprintf(stderr, "Invalid command '%s %s %s'\n", p->cmd->name,
			p->sub->name, p->argv[0]);
		snprintf(prefix, sizeof(prefix), "%s %s", p->cmd->name,
			 p->sub->name);
		list_subcommands(stderr, prefix, p->sub->sub);
	} else {
		subcommand_usage(stderr, p->cmd, p->sub, NULL);
	}
	return EXIT_USAGE;
}

static int run(struct parsed *p)
{
	const struct subcommand *target = p->subsub ? p->subsub : p->sub;
	uint64_t start = now_msec();
	int ret;

	if (p->help) {
		subcommand_usage(stdout, p->cmd, p->sub, p->subsub);
		return EXIT_SUCCESS;
	}
	if (p->argc < target->min_args) {
		subcommand_usage(stderr, p->cmd, p->sub, p->subsub);
		return EXIT_USAGE;
	}
	if (target->flags & CMD_NEED_NODELIST) {
		ret = update_node_list();
		if (ret)
			return ret;
	}
	ret = target->fn(p->argc, p->argv);
	if (ret == EXIT_USAGE)
		subcommand_usage(stderr, p->cmd, p->sub, p->subsub);
	if (show_time)
		printf("\nElapsed time: %.3f seconds\n",
		       (double)(now_msec() - start) / 1000);
	return ret;
}

static bool is_help(const char *s)
{
	return !strcmp(s, "help") || !strcmp(s, "-h") ||
	       !strcmp(s, "--help");
}

int main(int argc, char **argv)
{
	struct parsed p = { 0 };
	int ret;

	signal(SIGPIPE, SIG_IGN);
	log_invocation(argc, argv);
	ret = init_defaults();
	if (ret)
		return ret;
	if (argc < 2 || is_help(argv[1])) {
		general_help();
		return EXIT_SUCCESS;
	}
	p.cmd = find_command(argv[1]);
	if (!p.cmd) {
		fprintf(stderr, "Invalid command '%s'\n", argv[1]);
		usage_hint();
		return EXIT_USAGE;
	}
	if (argc < 3 || is_help(argv[2])) {
		list_subcommands(argc < 3 ? stderr : stdout, p.cmd->name,
				 p.cmd->sub);
		return argc < 3 ? EXIT_USAGE : EXIT_SUCCESS;
	}
	p.sub = find_sub(p.cmd->sub, argv[2]);
	if (!p.sub) {
		fprintf(stderr, "Invalid command '%s %s'\n", argv[1], argv[2]);
		list_subcommands(stderr, p.cmd->name, p.cmd->sub);
		return EXIT_USAGE;
	}
	ret = parse_options(&p, argc - 2, argv + 2);
	if (!ret)
		ret = select_subsub(&p);
	if (!ret)
		ret = run(&p);
	dog_close();
	dog_ring_free();
	free(sd_nodes);
	return ret;
}
