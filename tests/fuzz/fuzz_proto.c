// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * libFuzzer harness: every decoder of lib/proto.c, and the inode index
 * helpers of include/inode.h.
 *
 * Input: one selector byte, then the wire bytes.  The bytes go to the
 * selected decoder in a heap buffer of exactly the wire size (so that a
 * field table reaching past a structure is an ASan report), the result is
 * encoded again and must give back the same bytes (apart from what the
 * codec documents as not carried: the rb links of sd_node), and a few
 * header fields are compared with their wire bytes read independently.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "inode.h"
#include "proto.h"
#include "fuzz_input.h"

#define die(...) do { fprintf(stderr, __VA_ARGS__); abort(); } while (0)

typedef void (*dec_fn)(void *host, const void *buf);
typedef void (*enc_fn)(const void *host, void *buf);

struct codec {
	const char *name;
	size_t size;
	dec_fn dec;
	enc_fn enc;
	size_t skip;		/* leading bytes not carried (sd_node rb) */
};

#define CODEC(n, type, sk) { #n, sizeof(struct type), \
	(dec_fn)n##_decode, (enc_fn)n##_encode, (sk) }

static const struct codec codecs[] = {
	CODEC(sd_req, sd_req, 0),
	CODEC(sd_rsp, sd_rsp, 0),
	CODEC(sd_node, sd_node, 24),
	CODEC(cinfo_hdr, cluster_info_hdr, 0),
	CODEC(epoch_log_hdr, epoch_log_hdr, 0),
	CODEC(vdi_state, vdi_state, 0),
	CODEC(inode_header, sd_inode_header, 0),
	CODEC(config, sheepdog_config, 0),
	CODEC(recovery_state, recovery_state, 0),
	CODEC(sd_stat, sd_stat, 0),
	CODEC(throttling, recovery_throttling, 0),
};
#define NR_CODECS (sizeof(codecs) / sizeof(codecs[0]))

/* the header fields of a request or response, read without the codec */
static void check_header(const uint8_t *w, const void *host)
{
	const struct sd_req *r = host;	/* sd_rsp has the same header */

	if (r->proto_ver != w[0] || r->opcode != w[1] ||
	    r->flags != get_le16(w + 2) || r->epoch != get_le32(w + 4) ||
	    r->id != get_le32(w + 8) || r->data_length != get_le32(w + 12))
		die("sd_req/sd_rsp header decoded wrong\n");
}

static void roundtrip(const struct codec *c, struct fuzz_in *in)
{
	uint8_t *wire = malloc(c->size), *out = malloc(c->size);
	void *host = malloc(c->size);

	take_bytes(in, wire, c->size);
	c->dec(host, wire);
	memset(out, 0xa5, c->size);
	c->enc(host, out);
	if (memcmp(out + c->skip, wire + c->skip, c->size - c->skip))
		die("%s: encode(decode(x)) != x\n", c->name);
	if (c->skip && memchr(out, 0xa5, c->skip))
		die("%s: encoder left bytes unwritten\n", c->name);
	if (c->dec == (dec_fn)sd_req_decode || c->dec == (dec_fn)sd_rsp_decode)
		check_header(wire, host);
	if (c->dec == (dec_fn)sd_req_decode &&
	    sd_opcode_is_internal(((const struct sd_req *)host)->opcode) !=
	    (wire[1] >= 0x80))
		die("sd_opcode_is_internal disagrees\n");
	free(wire);
	free(out);
	free(host);
}

/* a node list of as many entries as the input holds */
static void node_list(struct fuzz_in *in)
{
	size_t nr = fuzz_left(in) / sizeof(struct sd_node), sz;
	const uint8_t *w = take_ptr(in, nr * sizeof(struct sd_node));
	struct sd_node *n;
	uint8_t *wire, *out;

	if (!nr)
		return;
	sz = nr * sizeof(*n);
	wire = malloc(sz);
	out = malloc(sz);
	n = malloc(sz);
	memcpy(wire, w, sz);
	sd_nodes_decode(n, nr, wire);
	sd_nodes_encode(n, nr, out);
	for (size_t i = 0; i < nr; i++)
		if (memcmp(out + i * 80 + 24, wire + i * 80 + 24, 56))
			die("sd_nodes: node %zu does not round-trip\n", i);
	free(wire);
	free(out);
	free(n);
}

/* inode index entries (le32) and grefs (le64) */
static void le_arrays(struct fuzz_in *in, size_t width)
{
	size_t nr = fuzz_left(in) / width, sz = nr * width;
	uint8_t *wire = malloc(sz ? sz : 1), *out = malloc(sz ? sz : 1);
	void *v = malloc(sz ? sz : 1);

	take_bytes(in, wire, sz);
	if (width == 4) {
		le32_array_decode(v, nr, wire);
		le32_array_encode(v, nr, out);
	} else {
		le64_array_decode(v, nr, wire);
		le64_array_encode(v, nr, out);
	}
	if (memcmp(out, wire, sz))
		die("le%zu array does not round-trip\n", width * 8);
	free(wire);
	free(out);
	free(v);
}

/*
 * The inode helpers, for the object sizes the daemon accepts (0 for the
 * default, or SD_MIN_BLOCK_SIZE_SHIFT..SD_MAX_BLOCK_SIZE_SHIFT).
 */
static void inode_helpers(struct fuzz_in *in)
{
	uint8_t s = take_u8(in) % (SD_MAX_BLOCK_SIZE_SHIFT -
				   SD_MIN_BLOCK_SIZE_SHIFT + 2);
	uint8_t shift = s ? (uint8_t)(SD_MIN_BLOCK_SIZE_SHIFT + s - 1) : 0;
	uint64_t oid = take_u64(in), size = take_u64(in);
	uint32_t idx = take_u32(in) % SD_INODE_DATA_INDEX;
	uint32_t off = take_u32(in), len = take_u32(in);
	uint32_t osz = sd_obj_size(oid, shift);
	uint8_t real = shift ? shift : SD_DEFAULT_BLOCK_SIZE_SHIFT;

	if (!osz)
		die("object size 0\n");
	if (inode_index_offset(idx) >= SD_INODE_GREF_OFFSET ||
	    inode_gref_offset(idx) + 8 > SD_INODE_SIZE)
		die("index entry %u outside the inode\n", idx);
	if (size <= inode_max_size(real) &&
	    inode_nr_objs(size, real) > SD_INODE_DATA_INDEX)
		die("a VDI within the limit needs more than a full index\n");
	if (inode_range_in_index(off, len) &&
	    ((uint64_t)off + len > SD_INODE_GREF_OFFSET ||
	     off < SD_INODE_INDEX_OFFSET))
		die("inode_range_in_index accepted a range outside\n");
	(void)oid_to_vid(oid);
	(void)ec_policy_data((uint8_t)oid);
	(void)ec_policy_parity((uint8_t)oid);
	if (!sd_strerror(off))
		die("sd_strerror returned NULL\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in;
	uint8_t sel;

	fuzz_in_init(&in, data, size);
	sel = take_u8(&in);
	if (sel < NR_CODECS * 16) {
		roundtrip(&codecs[sel % NR_CODECS], &in);
		return 0;
	}
	switch (sel % 4) {
	case 0:
		node_list(&in);
		break;
	case 1:
		le_arrays(&in, 4);
		break;
	case 2:
		le_arrays(&in, 8);
		break;
	default:
		inode_helpers(&in);
		break;
	}
	return 0;
}
