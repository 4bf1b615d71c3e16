/* SPDX-License-Identifier: MIT */
/*
 * ulb_priv.h - shared between the ULB's own files; not an interface.
 */
#ifndef ULB_ULB_PRIV_H
#define ULB_ULB_PRIV_H

#include "ulb/ulb_call.h"
#include "ulb/ulb_xdr.h"

struct ulb_scan {
	struct ulb_xdr x;
	const struct rr_pcl *pcl; /* NULL: the stream is complete */
	struct ulb_call *c;
	uint16_t op_index;
};

/* An eligible opaque item of at most @max bytes in the arguments. */
bool ulb_scan_item(struct ulb_scan *s, enum ulb_item kind, uint32_t max);

/* Remember an NFS Read operation (it consumes a Write chunk). */
static inline void ulb_scan_read_op(struct ulb_call *c, uint16_t op_index, uint32_t opcode,
				    enum ulb_item kind, uint32_t count)
{
	if (c->n_read_ops < ULB_MAX_READ_OPS) {
		struct ulb_read_op *r = &c->read_ops[c->n_read_ops];

		r->op_index = op_index;
		r->kind = (uint16_t)kind;
		r->opcode = opcode;
		r->count = count;
	}
	c->n_read_ops++;
}

/* A row of the eligibility tables (ulb_elig.c), indexed by procedure / op. */
struct ulb_elig_row {
	uint8_t arg; /* enum ulb_item */
	uint8_t res; /* enum ulb_item */
};

#define ULB_ELIG_NFS4_ROWS (ULB_OP_READ_PLUS + 1u)
extern const struct ulb_elig_row ulb_elig_nfs4[ULB_ELIG_NFS4_ROWS];

/* ulb_elig_res() for NFSv4, inline: the reply walk asks for every result. */
static inline enum ulb_item ulb_elig_res4(uint32_t op, uint32_t minor)
{
	if (op >= ULB_ELIG_NFS4_ROWS || (op == ULB_OP_READ_PLUS && minor < 2))
		return ULB_ITEM_NONE;
	return (enum ulb_item)ulb_elig_nfs4[op].res;
}

/* The highest operation number a minor version defines. */
static inline uint32_t ulb_op_last(uint32_t minor)
{
	return minor == 0 ? ULB_OP_LAST_V40 : minor == 1 ? ULB_OP_LAST_V41 : ULB_OP_LAST_V42;
}

/* Skip the arguments of one NFSv4 operation (RFC 7530, 8881, 7862, 8276). */
bool ulb_nfs4_skip_args(struct ulb_scan *s, uint32_t op);

/* Skip one non-Read NFSv4 result whose status word has been read. */
bool ulb_nfs4_skip_res(struct ulb_xdr *x, uint32_t op, uint32_t status);

/* Shared XDR shapes */
bool ulb_x_fattr4(struct ulb_xdr *x);
bool ulb_x_bitmap4(struct ulb_xdr *x);
bool ulb_x_netaddr4(struct ulb_xdr *x);
bool ulb_x_netloc4(struct ulb_xdr *x);
bool ulb_x_lock_owner4(struct ulb_xdr *x);
bool ulb_x_state_protect_ops4(struct ulb_xdr *x);
bool ulb_x_nfs_impl_id4_array(struct ulb_xdr *x);
bool ulb_x_channel_attrs4(struct ulb_xdr *x);

/* opaque_auth: flavor, body<MAX_AUTH_BYTES> (RFC 5531 section 8.2) */
static inline bool ulb_x_opaque_auth(struct ulb_xdr *x, uint32_t *flavor)
{
	return ulb_xdr_u32(x, flavor) && ulb_xdr_opaque(x, ULB_MAX_AUTH_BYTES, NULL, NULL);
}

#define ULB_MAX_BITMAP_WORDS 64u   /* bitmap4 words accepted */
#define ULB_MAX_ARRAY 65536u	   /* any other counted array */
#define ULB_MAX_OPAQUE 0x7fffffffu /* opaque<> without a protocol limit */

#endif
