// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The log of sheep and sheepfs: to a file (reopened on demand, for
 * logrotate), to stdout (under systemd, journald takes it) or to syslog;
 * one line per message, plain or JSON.  Levels follow syslog's numbers.
 * Any thread may log; a mutex keeps lines whole.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#include "util.h"

#define LOG_MSG_MAX	4096

static FILE *log_fp;
static char *log_path;
static int log_level = LOG_L_INFO;
static bool log_stderr;
static enum log_dst log_dst = LOG_DST_FILE;
static enum log_fmt log_fmt = LOG_FMT_DEFAULT;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
/* until the daemon serves, its errors also go here (log_set_startup_fd) */
static int log_startup_fd = -1;

static const char *const level_name[] = {
	"EMERG", "ALERT", "CRIT", "ERROR", "WARN", "NOTICE", "INFO", "DEBUG",
};

/* the names -l level= takes (syslog's, and Sheepdog's), then numbers */
static const char *const level_words[][2] = {
	{ "emerg", NULL }, { "alert", NULL }, { "crit", NULL },
	{ "err", "error" }, { "warning", "warn" }, { "notice", NULL },
	{ "info", NULL }, { "debug", NULL },
};

int log_level_parse(const char *s)
{
	char *end;
	long n;

	for (int l = 0; l < (int)ARRAY_SIZE(level_words); l++)
		for (int k = 0; k < 2; k++)
			if (level_words[l][k] &&
			    !strcasecmp(s, level_words[l][k]))
				return l;
	n = strtol(s, &end, 10);
	if (!*s || *end || n < LOG_L_EMERG || n > LOG_L_DEBUG)
		return -1;
	return (int)n;
}

const char *log_level_word(int level)
{
	if (level < LOG_L_EMERG || level > LOG_L_DEBUG)
		return "?";
	return level_words[level][0];
}

int log_setup(enum log_dst dst, enum log_fmt fmt, const char *path,
	      int level, bool to_stderr)
{
	log_dst = dst;
	log_fmt = fmt;
	log_level = level;
	log_stderr = to_stderr && dst != LOG_DST_STDOUT;
	if (dst == LOG_DST_SYSLOG) {
		openlog("sheep", LOG_PID | LOG_NDELAY, LOG_DAEMON);
		return 0;
	}
	if (dst == LOG_DST_STDOUT) {
		log_fp = stdout;
		setvbuf(stdout, NULL, _IOLBF, 0);
		return 0;
	}
	if (!path)
		return 0;
	free(log_path);
	log_path = xstrdup(path);
	log_fp = fopen(path, "a");
	if (!log_fp)
		return -1;
	setvbuf(log_fp, NULL, _IOLBF, 0);
	return 0;
}

int log_open(const char *path, int level, bool to_stderr)
{
	return log_setup(LOG_DST_FILE, LOG_FMT_DEFAULT, path, level,
			 to_stderr);
}

/* a log file is opened again by name (after logrotate moved it) */
int log_reopen(void)
{
	FILE *fp;

	if (log_dst != LOG_DST_FILE || !log_path)
		return 0;
	fp = fopen(log_path, "a");
	if (!fp)
		return -1;
	setvbuf(fp, NULL, _IOLBF, 0);
	pthread_mutex_lock(&log_lock);
	if (log_fp)
		fclose(log_fp);
	log_fp = fp;
	pthread_mutex_unlock(&log_lock);
	return 0;
}

/*
 * A daemonised sheep has no terminal: until it serves, its errors also go
 * to @fd (the pipe its parent reads and copies to the terminal that
 * started it), so that a start-up failure says why where the operator is
 * looking.  -1 ends that.
 */
void log_set_startup_fd(int fd)
{
	pthread_mutex_lock(&log_lock);
	log_startup_fd = fd;
	pthread_mutex_unlock(&log_lock);
}

/* "sheep: MSG\n" to the start-up pipe, control characters as '?' */
static void write_startup(const char *msg)
{
	char line[LOG_MSG_MAX + 16];
	size_t n = (size_t)snprintf(line, sizeof(line), "sheep: %s", msg);

	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20)
			line[i] = '?';
	line[n++] = '\n';
	if (write(log_startup_fd, line, n) < 0) {
		/* the parent is gone: nobody to tell */
	}
}

bool log_limit_pass(struct log_limit *ll, unsigned int *skipped)
{
	uint64_t now = now_msec();
	bool pass;

	pthread_mutex_lock(&log_lock);
	pass = now >= ll->next_ms;
	if (pass) {
		*skipped = ll->skipped;
		ll->skipped = 0;
		ll->next_ms = now + LOG_LIMIT_MS;
	} else {
		ll->skipped++;
	}
	pthread_mutex_unlock(&log_lock);
	return pass;
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

/* @in as the inside of a JSON string */
static void json_escape(FILE *fp, const char *in)
{
	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;

		if (c == '"' || c == '\\')
			fprintf(fp, "\\%c", c);
		else if (c < 0x20)
			fprintf(fp, "\\u%04x", c);
		else
			fputc(c, fp);
	}
}

static void write_line(FILE *fp, const struct timeval *tv,
		       const struct tm *tm, int level, const char *func,
		       int line, const char *msg)
{
	char ts[64];

	if (log_fmt == LOG_FMT_JSON) {
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", tm);
		fprintf(fp, "{\"time\":\"%s.%06ld\",\"level\":\"%s\","
			"\"func\":\"%s\",\"line\":%d,\"msg\":\"", ts,
			(long)tv->tv_usec, log_level_word(level), func, line);
		json_escape(fp, msg);
		fputs("\"}\n", fp);
		return;
	}
	strftime(ts, sizeof(ts), "%b %d %H:%M:%S", tm);
	fprintf(fp, "%s.%06ld %s [%s:%d] %s\n", ts, (long)tv->tv_usec,
		level_name[level], func, line, msg);
}

void log_write(int level, const char *func, int line, const char *fmt, ...)
{
	char msg[LOG_MSG_MAX];
	struct timeval tv;
	struct tm tm;
	va_list ap;

	bool startup = log_startup_fd >= 0 && level <= LOG_L_ERR;

	if (!startup && (level > log_level ||
	    (!log_fp && !log_stderr && log_dst != LOG_DST_SYSLOG)))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (startup) {
		pthread_mutex_lock(&log_lock);
		if (log_startup_fd >= 0)
			write_startup(msg);
		pthread_mutex_unlock(&log_lock);
		if (level > log_level)
			return;
	}
	if (log_dst == LOG_DST_SYSLOG)
		syslog(level, "%s [%s:%d] %s", level_name[level], func, line,
		       msg);
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	pthread_mutex_lock(&log_lock);
	if (log_fp && log_dst != LOG_DST_SYSLOG)
		write_line(log_fp, &tv, &tm, level, func, line, msg);
	if (log_stderr)
		write_line(stderr, &tv, &tm, level, func, line, msg);
	pthread_mutex_unlock(&log_lock);
}
