/* SPDX-License-Identifier: GPL-2.0-or-later */
/* dog node md info|plug|unplug (node_md.c) and the node options. */
#ifndef DOG_NODE_MD_H
#define DOG_NODE_MD_H

#include <stdbool.h>
#include "dog.h"

struct node_opts {
	bool progress;
	bool local;
	bool watch;
	bool metrics;
	bool all;	/* -A: md info of every node */
	bool force;	/* -f: no confirmation */
};
extern struct node_opts nopt;
extern const struct subcommand node_md_cmds[];

#endif
