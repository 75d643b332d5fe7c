// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * A broken invariant stops the process (sd_assert, util.h): a daemon that
 * stops loses nothing, one that runs on writes garbage.  The condition,
 * where it was stated and a backtrace go to the log and to stderr, then
 * the process aborts (a core, if the system keeps them).  On in every
 * build: NDEBUG does not touch it.
 */
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "util.h"

#define BACKTRACE_MAX	32

void sd_assert_fail(const char *cond, const char *file, int line,
		    const char *func)
{
	void *frames[BACKTRACE_MAX];
	char **names;
	int n;

	sd_emerg("assertion failed: %s (%s:%d, %s)", cond, file, line, func);
	fprintf(stderr, "assertion failed: %s (%s:%d, %s)\n", cond, file,
		line, func);
	n = backtrace(frames, BACKTRACE_MAX);
	names = backtrace_symbols(frames, n);
	for (int i = 0; i < n; i++)
		sd_emerg("  #%d %s", i, names ? names[i] : "?");
	backtrace_symbols_fd(frames, n, STDERR_FILENO);
	abort();
}
