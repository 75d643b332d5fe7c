// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * dog vdi rollback|tree|graph (dog.md §2.5, §2.7, §2.8): going back to a
 * snapshot and drawing the snapshot/clone families.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dog.h"
#include "util.h"
#include "vdi.h"

/* ---- rollback ---- */

int vdi_rollback(int argc, char **argv)
{
	const char *name = argv[0];
	struct vdi_inode snap, cur;
	struct new_vdi nv = { .name = name };
	uint32_t cur_vid, vid;
	int ret;

	if (!vopt.snapid && !vopt.tag[0]) {
		fprintf(stderr, "Please specify the '-s' option\n");
		return EXIT_USAGE;
	}
	ret = open_vdi(name, vopt.snapid, vopt.tag, &snap, false);
	if (ret)
		return ret;
	if (!snap.h.snap_ctime) {
		fprintf(stderr, "%s (snapshot id: %" PRIu32 " snapshot tag: "
			"%s) is not a snapshot\n", name, vopt.snapid,
			vopt.tag);
		return EXIT_FAILURE;
	}
	if (lookup_vdi(name, 0, "", &cur_vid) == SD_RES_SUCCESS &&
	    refuse_in_use(cur_vid, name, "roll back"))
		return EXIT_FAILURE;
	if (!vopt.force &&
	    !confirm_prompt("This operation discards any changes made since "
			    "the previous\nsnapshot was taken.  Continue? "
			    "[yes/no]: "))
		return EXIT_SUCCESS;

	/* the current VDI may already be gone: then only re-create it */
	ret = lookup_vdi(name, 0, "", &cur_vid);
	if (ret == SD_RES_SUCCESS) {
		ret = open_vdi_vid(cur_vid, &cur, true);
		if (ret)
			return ret;
		ret = delete_vdi_inode(&cur, name, 0, "");
		free_inode(&cur);
		if (ret != SD_RES_SUCCESS) {
			fprintf(stderr, "Failed to delete the current state "
				"of %s\n", name);
			return EXIT_FAILURE;
		}
	} else if (ret != SD_RES_NO_VDI) {
		fprintf(stderr, "Failed to open VDI %s: %s\n", name,
			sd_strerror((uint32_t)ret));
		return EXIT_FAILURE;
	}

	nv.size = snap.h.vdi_size;
	nv.base = snap.vid;
	nv.copies = snap.h.nr_copies;
	nv.copy_policy = snap.h.copy_policy;
	nv.store_policy = snap.h.store_policy;
	nv.shift = snap.h.block_size_shift;
	ret = new_vdi(&nv, &vid);
	if (ret != SD_RES_SUCCESS) {
		fprintf(stderr, "Failed to create VDI %s: %s\n", name,
			sd_strerror((uint32_t)ret));
		return EXIT_FAILURE;
	}
	if (verbose) {
		if (raw_output)
			printf("%x\n", vid);
		else
			printf("New VDI ID of rollbacked VDI: %x\n", vid);
	}
	return EXIT_SUCCESS;
}

/* ---- the VDI families, shared by tree and graph ---- */

struct vnode_info {
	uint32_t vid;
	struct sd_inode_header h;
	struct vnode_info *parent;	/* same name, vid == parent_vdi_id */
	struct vnode_info **child;
	int nr_child;
	char label[64];
};

struct vdi_family {
	struct vnode_info *v;
	int nr, cap;
};

static void collect_vdi(uint32_t vid, const struct sd_inode_header *h,
			const uint32_t *index, uint32_t nr, void *data)
{
	struct vdi_family *f = data;
	struct vnode_info *n;

	if (f->nr == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->v = xrealloc(f->v, sizeof(*f->v) * (size_t)f->cap);
	}
	n = &f->v[f->nr++];
	memset(n, 0, sizeof(*n));
	n->vid = vid;
	n->h = *h;
}

static struct vnode_info *find_vid(struct vdi_family *f, uint32_t vid)
{
	int lo = 0, hi = f->nr - 1;

	/* parse_vdi visits in ascending vid order */
	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (f->v[mid].vid == vid)
			return &f->v[mid];
		if (f->v[mid].vid < vid)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* link every VDI to its parent of the same name; returns 0 or exit code */
static int load_families(struct vdi_family *f)
{
	int ret = parse_vdi(collect_vdi, false, f);

	if (ret)
		return ret;
	for (int i = 0; i < f->nr; i++) {
		struct vnode_info *n = &f->v[i], *p;

		if (!n->h.parent_vdi_id)
			continue;
		p = find_vid(f, n->h.parent_vdi_id);
		if (!p || strncmp(p->h.name, n->h.name, SD_MAX_VDI_LEN))
			continue;
		n->parent = p;
		p->nr_child++;
	}
	for (int i = 0; i < f->nr; i++) {
		struct vnode_info *p = f->v[i].parent;

		if (!p)
			continue;
		if (!p->child)
			p->child = xzalloc(sizeof(*p->child) *
					   (size_t)p->nr_child);
		for (int k = 0; k < p->nr_child; k++) {
			if (!p->child[k]) {
				p->child[k] = &f->v[i];
				break;
			}
		}
	}
	return 0;
}

static void free_families(struct vdi_family *f)
{
	for (int i = 0; i < f->nr; i++)
		free(f->v[i].child);
	free(f->v);
}

/* ---- tree ---- */

struct tree_ctx {
	char *pfx;		/* continuation prefix, one char per column */
	bool bold;
};

static void tree_label(const struct tree_ctx *t, const char *label,
		       bool here)
{
	if (here && t->bold)
		printf("\033[1m%s\033[0m", label);
	else
		printf("%s", label);
}

/*
 * Print @n (whose label starts at column @col, the cursor being there
 * already) and its subtree.  A node with several children draws a spine
 * one column right of its label's end; later children hang off it with
 * "|-" or "`-", and while more children follow, the spine shows as "|"
 * on the lines of the subtrees above them.
 */
static void tree_print(struct tree_ctx *t, const struct vnode_info *n,
		       size_t col)
{
	size_t spine;

	tree_label(t, n->label, !n->h.snap_ctime);
	col += strlen(n->label);
	if (!n->nr_child) {
		printf("\n");
		return;
	}
	if (n->nr_child == 1) {
		printf("---");
		tree_print(t, n->child[0], col + 3);
		return;
	}
	printf("-+-");
	spine = col + 1;
	t->pfx[spine] = '|';
	tree_print(t, n->child[0], col + 3);
	for (int i = 1; i < n->nr_child; i++) {
		bool last = i == n->nr_child - 1;

		printf("%.*s%s", (int)spine, t->pfx, last ? "`-" : "|-");
		if (last)
			t->pfx[spine] = ' ';
		tree_print(t, n->child[i], spine + 2);
	}
	t->pfx[spine] = ' ';
}

int vdi_tree(int argc, char **argv)
{
	struct vdi_family f = { 0 };
	struct tree_ctx t = { .bold = isatty(STDOUT_FILENO) && !raw_output };
	size_t width = 1;
	int ret;

	ret = load_families(&f);
	if (ret)
		return ret;
	for (int i = 0; i < f.nr; i++) {
		struct vnode_info *n = &f.v[i];

		if (n->h.snap_ctime)
			fmt_time(n->h.create_time >> 32,
				 "[%Y-%m-%d %H:%M]", n->label,
				 sizeof(n->label));
		else
			strcpy(n->label, "(you are here)");
		width += strlen(n->label) + 3 + SD_MAX_VDI_LEN + 3;
	}
	t.pfx = xmalloc(width);
	memset(t.pfx, ' ', width);
	for (int i = 0; i < f.nr; i++) {
		char name[SD_MAX_VDI_LEN + 1];
		size_t len;

		if (f.v[i].parent)
			continue;
		inode_name(&f.v[i].h, name);
		len = strlen(name);
		printf("%s---", name);
		tree_print(&t, &f.v[i], len + 3);
	}
	free(t.pfx);
	free_families(&f);
	return EXIT_SUCCESS;
}

/* ---- graph ---- */

/* a string inside a double-quoted Graphviz string */
static void print_dot_escaped(const char *s)
{
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

int vdi_graph(int argc, char **argv)
{
	struct vdi_family f = { 0 };
	int ret;

	ret = load_families(&f);
	if (ret)
		return ret;
	printf("digraph G {\n");
	printf("  node [shape = \"box\", fontname = \"Courier\"];\n\n");
	printf("  \"0\" [shape = \"ellipse\", label = \"root\"];\n\n");
	for (int i = 0; i < f.nr; i++) {
		const struct vnode_info *n = &f.v[i];
		char name[SD_MAX_VDI_LEN + 1], size[32], date[32], time[32];

		inode_name(&n->h, name);
		size_to_str(n->h.vdi_size, size, sizeof(size));
		fmt_time(n->h.create_time >> 32, "%Y-%m-%d", date,
			 sizeof(date));
		fmt_time(n->h.create_time >> 32, "%H:%M:%S", time,
			 sizeof(time));
		printf("  \"%x\" -> \"%x\";\n", n->h.parent_vdi_id, n->vid);
		printf("  \"%x\" [\n", n->vid);
		printf("    group = \"");
		print_dot_escaped(name);
		printf("\",\n");
		printf("    label = \"%-10s", "Name:");
		print_dot_escaped(name);
		printf("\\n%-10s%x\\n%-10s%s\\n%-10s%s\\n%-10s%s\"",
		       "Tag:", n->h.snap_id, "Size:", size, "Date:", date,
		       "Time:", time);
		if (!n->h.snap_ctime)
			printf(",\n    color = \"red\"");
		printf("\n  ];\n\n");
	}
	printf("}\n");
	free_families(&f);
	return EXIT_SUCCESS;
}
