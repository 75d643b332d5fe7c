// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Object file names (cluster.md §11.2): a replicated object is the file
 * <16 hex digits of the oid>, strip i of an erasure-coded one the file
 * <oid>_<i>.  Stale copies and temporary files add a suffix to these.
 */
#include <inttypes.h>
#include <stdio.h>
#include "store.h"
#include "store_int.h"

void store_key_name(char *buf, size_t len, struct obj_key k)
{
	if (k.idx == OBJ_IDX_REPLICA)
		snprintf(buf, len, "%016" PRIx64, k.oid);
	else
		snprintf(buf, len, "%016" PRIx64 "_%u", k.oid, k.idx);
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * Only the names the store writes: a name that strtoull() would also take
 * ("+...", upper case, "_07") would be listed under a key whose own name
 * differs, an object that could then never be opened.
 */
const char *store_parse_key_prefix(const char *name, struct obj_key *k)
{
	unsigned int idx = 0;
	int i;

	k->oid = 0;
	for (i = 0; i < 16; i++) {
		if (!is_lower_hex(name[i]))
			return NULL;
		k->oid = k->oid << 4 |
			 (uint64_t)(name[i] <= '9' ? name[i] - '0' :
				    name[i] - 'a' + 10);
	}
	k->idx = OBJ_IDX_REPLICA;
	name += 16;
	if (*name != '_')
		return name;
	/* 0..254, no leading zero: 255 is the replica's */
	for (i = 1; i <= 3 && name[i] >= '0' && name[i] <= '9'; i++)
		idx = idx * 10 + (unsigned int)(name[i] - '0');
	if (i == 1 || (name[1] == '0' && i > 2) || idx >= OBJ_IDX_REPLICA)
		return NULL;
	k->idx = (uint8_t)idx;
	return name + i;
}

int store_parse_key(const char *name, struct obj_key *k)
{
	const char *rest = store_parse_key_prefix(name, k);

	return rest && !*rest ? 0 : -1;
}
