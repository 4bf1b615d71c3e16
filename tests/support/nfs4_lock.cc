// SPDX-License-Identifier: MIT
/*
 * nfs4_lock.cc - the NFSv4.1 byte-range lock operations of the test client
 * (LOCK, LOCKT, LOCKU: RFC 8881 sections 18.10-18.12), with LOCK's reclaim
 * flag for state recovery after a server restart (section 8.4.2.1). With
 * sessions the lock and open seqids are ignored by the server (section
 * 8.2.2): they go as 0.
 */
#include "support/nfs_client.h"

namespace nfsc
{

using nfsxdr::Xdr;

enum : uint32_t {
	NFS4ERR_DENIED = 10010,
	NFS4_OPAQUE_LIMIT = 1024,
};

/* LOCK4denied (section 18.10.2) */
static void get_denied(Dec &d, LockRange *out)
{
	LockRange l;
	l.off = d.u64();
	l.len = d.u64();
	l.type = d.u32();
	l.owner_clientid = d.u64();
	l.owner = d.opaque(NFS4_OPAQUE_LIMIT);
	if (out)
		*out = l;
}

int Nfs4::lock(const Fh &fh, const Stateid &open, uint32_t type, uint64_t off, uint64_t len,
	       bool reclaim, Stateid *lock_sid, LockRange *denied)
{
	Comp c;
	begin_fh(c, fh, nfsxdr::LOCK);
	c.x.u32(type);
	c.x.boolean(reclaim);
	c.x.u64(off);
	c.x.u64(len);
	c.x.boolean(true); /* new_lock_owner: open_to_lock_owner4 */
	c.x.u32(0);	   /* open_seqid */
	stateid4(c.x, open);
	c.x.u32(0); /* lock_seqid */
	c.x.u64(clientid_);
	c.x.string("lock-owner-" + std::to_string(++owner_seq_));
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	Dec &r = *d;
	rc = res(r, nfsxdr::PUTFH);
	if (rc)
		return rc;
	rc = res(r, nfsxdr::LOCK);
	if (rc == NFS4ERR_DENIED) {
		get_denied(r, denied);
		if (!r.end())
			return fail(r.why());
		return rc;
	}
	if (rc)
		return rc;
	get_stateid4(r, lock_sid);
	if (!r.end())
		return fail(r.why());
	return 0;
}

int Nfs4::lockt(const Fh &fh, uint32_t type, uint64_t off, uint64_t len, LockRange *denied)
{
	Comp c;
	begin_fh(c, fh, nfsxdr::LOCKT);
	c.x.u32(type);
	c.x.u64(off);
	c.x.u64(len);
	c.x.u64(clientid_);
	c.x.string("lockt-owner-" + std::to_string(++owner_seq_));
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	Dec &r = *d;
	rc = res(r, nfsxdr::PUTFH);
	if (rc)
		return rc;
	rc = res(r, nfsxdr::LOCKT);
	if (rc == NFS4ERR_DENIED)
		get_denied(r, denied);
	else if (rc)
		return rc;
	if (!r.end())
		return fail(r.why());
	return rc;
}

int Nfs4::locku(const Fh &fh, Stateid *lock_sid, uint32_t type, uint64_t off, uint64_t len)
{
	Comp c;
	begin_fh(c, fh, nfsxdr::LOCKU);
	c.x.u32(type);
	c.x.u32(0); /* seqid */
	stateid4(c.x, *lock_sid);
	c.x.u64(off);
	c.x.u64(len);
	std::unique_ptr<Dec> d;
	int rc = send(c, &d, true);
	if (rc)
		return rc;
	Dec &r = *d;
	rc = res(r, nfsxdr::PUTFH);
	if (rc)
		return rc;
	rc = res(r, nfsxdr::LOCKU);
	if (rc)
		return rc;
	get_stateid4(r, lock_sid);
	if (!r.end())
		return fail(r.why());
	return 0;
}

} // namespace nfsc
