// SPDX-License-Identifier: GPL-2.0-or-later
/* The daemon's settings and its way out. */
#include <stdlib.h>
#include <unistd.h>
#include "core/core.h"

struct sheep_state sys;

static const char *pidfile;

void sheep_set_pidfile(const char *path)
{
	pidfile = path;
}

void sheep_exit(int code)
{
	if (pidfile)
		unlink(pidfile);
	exit(code);
}
