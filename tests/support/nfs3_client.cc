// SPDX-License-Identifier: MIT
/*
 * nfs3_client.cc - MOUNT v3 and NFSv3 procedures of the test client, from
 * the XDR of RFC 1813 (sections 3 and 5).
 */
#include "support/nfs_client.h"

#include <algorithm>
#include <cstring>

namespace nfsc
{

using nfsxdr::Xdr;

/* RFC 1813 section 2.5 / 3 */
enum : uint32_t {
	NFS3_FHSIZE = 64,
	NFS3_MAXNAME = 255,
	NFS3_MAXPATH = 4096,
	FILE_SYNC = 2,
	UNCHECKED = 0,
	MNTPATHLEN = 1024,
};
enum : uint32_t {
	P3_NULL = 0,
	P3_GETATTR = 1,
	P3_LOOKUP = 3,
	P3_READLINK = 5,
	P3_READ = 6,
	P3_WRITE = 7,
	P3_CREATE = 8,
	P3_MKDIR = 9,
	P3_SYMLINK = 10,
	P3_REMOVE = 12,
	P3_READDIR = 16,
	P3_READDIRPLUS = 17,
};

/* Largest data item this client accepts in one READ reply. */
constexpr uint32_t kMaxData = 64u << 20;

static uint32_t get32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

static void fh3(Xdr &x, const Fh &fh)
{
	x.opaque(fh.b);
}

static void diropargs3(Xdr &x, const Fh &dir, const std::string &name)
{
	fh3(x, dir);
	x.string(name);
}

/* sattr3 setting only the mode (RFC 1813 section 2.6) */
static void sattr3_mode(Xdr &x, uint32_t mode)
{
	x.u32(1); /* set_mode3 */
	x.u32(mode);
	x.u32(0); /* uid */
	x.u32(0); /* gid */
	x.u32(0); /* size */
	x.u32(0); /* atime DONT_CHANGE */
	x.u32(0); /* mtime DONT_CHANGE */
}

static void fattr3(Dec &d, Attr *a)
{
	Attr t;
	t.type = d.u32();
	t.mode = d.u32();
	d.u32(); /* nlink */
	d.u32(); /* uid */
	d.u32(); /* gid */
	t.size = d.u64();
	d.u64(); /* used */
	d.u64(); /* rdev */
	d.u64(); /* fsid */
	t.fileid = d.u64();
	d.skip(24); /* atime, mtime, ctime */
	if (t.type < 1 || t.type > 7)
		d.fail("fattr3 type " + std::to_string(t.type));
	if (a)
		*a = t;
}

static bool post_op_attr(Dec &d, Attr *a)
{
	if (!d.boolean())
		return false;
	fattr3(d, a);
	return true;
}

static void wcc_data(Dec &d)
{
	if (d.boolean())
		d.skip(24); /* wcc_attr: size, mtime, ctime */
	post_op_attr(d, nullptr);
}

static bool post_op_fh3(Dec &d, Fh *fh)
{
	if (!d.boolean())
		return false;
	Bytes b = d.opaque(NFS3_FHSIZE);
	if (fh)
		fh->b = b;
	return true;
}

static int done(Client *, Dec &d, std::string *err, int status)
{
	if (!d.end()) {
		*err = d.why();
		return E_RPC;
	}
	return status;
}

#define CHECK_DEC(d)                                                                               \
	do {                                                                                       \
		if (!(d).ok())                                                                     \
			return fail((d).why());                                                    \
	} while (0)

int Mount3::null()
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_MOUNT, 3, 0);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	return done(this, *d, &err_, 0);
}

int Mount3::mnt(const std::string &path, Fh *root)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_MOUNT, 3, 1);
	x.string(path);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	uint32_t st = d->u32();
	if (st == 0) {
		root->b = d->opaque(NFS3_FHSIZE);
		uint32_t n = d->u32();
		if (n > 64)
			d->fail("auth_flavors count " + std::to_string(n));
		for (uint32_t i = 0; i < n && d->ok(); i++)
			d->u32();
	}
	CHECK_DEC(*d);
	if (st == 0 && root->b.empty())
		return fail("MNT returned an empty file handle");
	return done(this, *d, &err_, int(st));
}

int Nfs3::null()
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_NULL);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	return done(this, *d, &err_, 0);
}

int Nfs3::getattr(const Fh &fh, Attr *a)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_GETATTR);
	fh3(x, fh);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	uint32_t st = d->u32();
	if (st == 0)
		fattr3(*d, a);
	CHECK_DEC(*d);
	return done(this, *d, &err_, int(st));
}

int Nfs3::lookup(const Fh &dir, const std::string &name, Fh *out, Attr *a)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_LOOKUP);
	diropargs3(x, dir, name);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	uint32_t st = d->u32();
	if (st == 0) {
		out->b = d->opaque(NFS3_FHSIZE);
		post_op_attr(*d, a);
	}
	post_op_attr(*d, nullptr); /* dir_attributes */
	CHECK_DEC(*d);
	return done(this, *d, &err_, int(st));
}

int Nfs3::created(Dec &d, uint32_t st, Fh *out)
{
	if (st == 0) {
		Fh fh;
		bool have = post_op_fh3(d, &fh);
		post_op_attr(d, nullptr);
		if (out)
			*out = fh;
		if (d.ok() && !have)
			d.fail("no file handle returned");
	}
	wcc_data(d);
	CHECK_DEC(d);
	return done(this, d, &err_, int(st));
}

int Nfs3::create(const Fh &dir, const std::string &name, uint32_t mode, Fh *out)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_CREATE);
	diropargs3(x, dir, name);
	x.u32(UNCHECKED);
	sattr3_mode(x, mode);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	return created(*d, d->u32(), out);
}

int Nfs3::mkdir(const Fh &dir, const std::string &name, uint32_t mode, Fh *out)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_MKDIR);
	diropargs3(x, dir, name);
	sattr3_mode(x, mode);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	return created(*d, d->u32(), out);
}

int Nfs3::symlink(const Fh &dir, const std::string &name, const std::string &target, Fh *out)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_SYMLINK);
	diropargs3(x, dir, name);
	sattr3_mode(x, 0777);
	CallOpts o;
	/* symlink_data is DDP-eligible (RFC 8267 section 4.3) */
	nfsxdr::Item it = x.item(Bytes(target.begin(), target.end()));
	o.items.push_back({size_t(it.position), it.length});
	std::unique_ptr<Dec> d;
	int rc = rpc(x, o, &d);
	if (rc)
		return rc;
	return created(*d, d->u32(), out);
}

nfsxdr::Xdr Nfs3::read_call(const Fh &fh, uint64_t off, uint32_t count, CallOpts *o)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_READ);
	fh3(x, fh);
	x.u64(off);
	x.u32(count);
	o->payloads = {count}; /* READ data is DDP-eligible (RFC 8267 section 4.3) */
	o->reply_max = 160;
	return x;
}

int Nfs3::read_reply(const TransportReply &r, uint32_t xid, uint32_t count, Bytes *data, bool *eof)
{
	if (r.rdma_error)
		return rdma_error(r);
	Dec d(r);
	std::string e;
	if (!rpc_reply_ok(d, xid, &e))
		return fail(e);
	uint32_t st = d.u32();
	post_op_attr(d, nullptr);
	if (st == 0) {
		uint32_t n = d.u32();
		bool ef = d.boolean();
		Bytes b = d.payload(std::min(count, kMaxData));
		CHECK_DEC(d);
		if (n != b.size())
			return fail("READ3resok count " + std::to_string(n) + " but data<" +
				    std::to_string(b.size()) + ">");
		*data = std::move(b);
		if (eof)
			*eof = ef;
	}
	CHECK_DEC(d);
	return done(this, d, &err_, int(st));
}

int Nfs3::read(const Fh &fh, uint64_t off, uint32_t count, Bytes *data, bool *eof)
{
	CallOpts o;
	Xdr x = read_call(fh, off, count, &o);
	std::string e;
	last_ = TransportReply();
	err_.clear();
	if (!t_.call(x.buf, o, &last_, &e))
		return fail(e);
	return read_reply(last_, get32(x.buf.data()), count, data, eof);
}

nfsxdr::Xdr Nfs3::write_call(const Fh &fh, uint64_t off, const Bytes &data, CallOpts *o)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_WRITE);
	fh3(x, fh);
	x.u64(off);
	x.u32(uint32_t(data.size()));
	x.u32(FILE_SYNC);
	nfsxdr::Item it = x.item(data); /* DDP-eligible (RFC 8267 section 4.3) */
	o->items.push_back({size_t(it.position), it.length});
	return x;
}

int Nfs3::write_reply(const TransportReply &r, uint32_t xid, size_t len, uint32_t *count)
{
	if (r.rdma_error)
		return rdma_error(r);
	Dec d(r);
	std::string e;
	if (!rpc_reply_ok(d, xid, &e))
		return fail(e);
	uint32_t st = d.u32();
	wcc_data(d);
	if (st == 0) {
		uint32_t n = d.u32();
		uint32_t committed = d.u32();
		d.skip(8); /* writeverf3 */
		CHECK_DEC(d);
		if (n > len)
			return fail("WRITE3resok count " + std::to_string(n) + " > " +
				    std::to_string(len));
		if (committed != FILE_SYNC)
			return fail("WRITE3resok committed " + std::to_string(committed) +
				    " for a FILE_SYNC write");
		if (count)
			*count = n;
		else if (n != len)
			return fail("short WRITE: " + std::to_string(n));
	}
	CHECK_DEC(d);
	return done(this, d, &err_, int(st));
}

int Nfs3::write(const Fh &fh, uint64_t off, const Bytes &data, uint32_t *count)
{
	CallOpts o;
	Xdr x = write_call(fh, off, data, &o);
	std::string e;
	last_ = TransportReply();
	err_.clear();
	if (!t_.call(x.buf, o, &last_, &e))
		return fail(e);
	return write_reply(last_, get32(x.buf.data()), data.size(), count);
}

int Nfs3::readlink(const Fh &fh, std::string *target)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_READLINK);
	fh3(x, fh);
	CallOpts o;
	o.payloads = {NFS3_MAXPATH};
	o.reply_max = 128;
	std::unique_ptr<Dec> d;
	int rc = rpc(x, o, &d);
	if (rc)
		return rc;
	uint32_t st = d->u32();
	post_op_attr(*d, nullptr);
	if (st == 0) {
		Bytes b = d->payload(NFS3_MAXPATH);
		target->assign(b.begin(), b.end());
	}
	CHECK_DEC(*d);
	return done(this, *d, &err_, int(st));
}

int Nfs3::readdir_once(const Fh &dir, uint64_t cookie, uint32_t count, std::vector<DirEntry> *out,
		       bool *eof)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_READDIR);
	fh3(x, dir);
	x.u64(cookie);
	x.fixed(Bytes(cookieverf_, cookieverf_ + 8));
	x.u32(count);
	CallOpts o;
	o.reply_max = count + 256;
	std::unique_ptr<Dec> d;
	int rc = rpc(x, o, &d);
	if (rc)
		return rc;
	uint32_t st = d->u32();
	post_op_attr(*d, nullptr);
	if (st == 0) {
		d->fixed(8, cookieverf_);
		while (d->ok() && d->boolean()) {
			DirEntry e;
			e.fileid = d->u64();
			e.name = d->string(NFS3_MAXNAME);
			e.cookie = d->u64();
			out->push_back(e);
		}
		*eof = d->boolean();
	}
	CHECK_DEC(*d);
	return done(this, *d, &err_, int(st));
}

int Nfs3::readdir(const Fh &dir, std::vector<DirEntry> *out, uint32_t count)
{
	uint64_t cookie = 0;
	memset(cookieverf_, 0, sizeof(cookieverf_));
	out->clear();
	for (int calls = 0; calls < 100000; calls++) {
		bool eof = false;
		size_t before = out->size();
		int rc = readdir_once(dir, cookie, count, out, &eof);
		if (rc)
			return rc;
		if (eof)
			return 0;
		if (out->size() == before)
			return fail("READDIR made no progress without eof");
		cookie = out->back().cookie;
	}
	return fail("READDIR did not end");
}

int Nfs3::readdirplus(const Fh &dir, std::vector<DirEntry> *out, uint32_t maxcount)
{
	uint64_t cookie = 0;
	uint8_t verf[8] = {};
	out->clear();
	for (int calls = 0; calls < 100000; calls++) {
		Xdr x;
		uint32_t xid;
		header(x, &xid, PROG_NFS, 3, P3_READDIRPLUS);
		fh3(x, dir);
		x.u64(cookie);
		x.fixed(Bytes(verf, verf + 8));
		x.u32(maxcount / 4); /* dircount */
		x.u32(maxcount);
		CallOpts o;
		o.reply_max = maxcount + 256;
		std::unique_ptr<Dec> d;
		int rc = rpc(x, o, &d);
		if (rc)
			return rc;
		uint32_t st = d->u32();
		post_op_attr(*d, nullptr);
		if (st) {
			CHECK_DEC(*d);
			return done(this, *d, &err_, int(st));
		}
		d->fixed(8, verf);
		size_t before = out->size();
		while (d->ok() && d->boolean()) {
			DirEntry e;
			e.fileid = d->u64();
			e.name = d->string(NFS3_MAXNAME);
			e.cookie = d->u64();
			e.has_attr = post_op_attr(*d, &e.attr);
			post_op_fh3(*d, &e.fh);
			out->push_back(e);
		}
		bool eof = d->boolean();
		CHECK_DEC(*d);
		rc = done(this, *d, &err_, 0);
		if (rc || eof)
			return rc;
		if (out->size() == before)
			return fail("READDIRPLUS made no progress without eof");
		cookie = out->back().cookie;
	}
	return fail("READDIRPLUS did not end");
}

int Nfs3::remove(const Fh &dir, const std::string &name)
{
	Xdr x;
	uint32_t xid;
	header(x, &xid, PROG_NFS, 3, P3_REMOVE);
	diropargs3(x, dir, name);
	std::unique_ptr<Dec> d;
	int rc = rpc(x, CallOpts(), &d);
	if (rc)
		return rc;
	uint32_t st = d->u32();
	wcc_data(*d);
	CHECK_DEC(*d);
	return done(this, *d, &err_, int(st));
}

} // namespace nfsc
