// SPDX-License-Identifier: MIT
/*
 * The per-peer cap counts an IPv6 peer by its /64 (Peer_Prefix_V6), at the
 * defaults and at the scale of the attack it stops: one host with a /64
 * (SLAAC, privacy addresses) opening 64 connections from each of 16
 * addresses would otherwise hold all 1,024 of Max_Connections.
 *
 * The addresses are real: the test enters a network namespace of its own
 * (as root; CI runs as root) and puts 16 addresses of fd00:32::/64 and one
 * of fd00:33::/64 on its loopback. The server listens on [::] there, and the
 * soft fabric binds each connection's source (RPCRDMA_SOFT_SOURCE_ADDR).
 */
#include <sched.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "rr_transport_fixture.h"

using namespace rrtest;

namespace {

constexpr int kAddrs = 16, kPerAddr = 64, kCap = 64, kMaxConns = 1024;

std::string addr_in(const char *net, int host)
{
	return std::string(net) + std::to_string(host);
}

/* A network namespace of this process's own with the test addresses on
 * its loopback; an empty string, or what failed. */
std::string enter_netns()
{
	static std::string done = "not yet";

	if (done != "not yet")
		return done;
	if (unshare(CLONE_NEWNET) != 0)
		return done = std::string("unshare(CLONE_NEWNET): ") + strerror(errno) +
			      " (this test needs root)";
	std::string cmd = "ip link set lo up";
	for (int a = 1; a <= kAddrs; a++)
		cmd += " && ip -6 addr add " + addr_in("fd00:32::", a) + "/64 dev lo nodad";
	cmd += " && ip -6 addr add fd00:33::1/64 dev lo nodad";
	if (system(cmd.c_str()) != 0)
		return done = "could not set up the namespace's addresses: " + cmd;
	return done = "";
}

std::unique_ptr<Requester> connect_from(const std::string &server, const std::string &source)
{
	RequesterOptions o;
	o.addr = server;
	o.connect_timeout_ms = 3000;
	std::string err;
	setenv("RPCRDMA_SOFT_SOURCE_ADDR", source.c_str(), 1);
	auto r = Requester::connect(o, &err);
	unsetenv("RPCRDMA_SOFT_SOURCE_ADDR");
	return r;
}

class PeerV6 : public TransportTest {
      protected:
	std::string netns = enter_netns();

	PeerV6()
	{
		/* Every key at its default: Max_Connections 1024,
		 * Max_Connections_Per_Peer 64, Peer_Prefix_V6 64. */
		sopts.tcp = true;
		sopts.tcp_host = "::";
	}
	void SetUp() override
	{
		ASSERT_EQ(netns, "");
		TransportTest::SetUp();
	}
};

TEST_F(PeerV6, SixteenAddressesOfOneSlash64AreOnePeer)
{
	std::vector<std::unique_ptr<Requester>> held;
	int admitted = 0, refused = 0;
	auto t0 = std::chrono::steady_clock::now();

	/* Round-robin over the addresses, as a client spreading its
	 * connections would: the cap is reached with every address in use. */
	for (int i = 0; i < kPerAddr; i++)
		for (int a = 1; a <= kAddrs; a++) {
			auto r = connect_from(srv.addr(), addr_in("fd00:32::", a));
			if (!r) {
				refused++;
				continue;
			}
			ASSERT_TRUE(ping(r.get())) << "admitted connection #" << admitted;
			admitted++;
			held.push_back(std::move(r));
		}
	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	printf("%d connection requests from %d addresses of fd00:32::/64 in %.1f s: "
	       "%d admitted, %d refused\n",
	       kAddrs * kPerAddr, kAddrs, secs, admitted, refused);
	EXPECT_EQ(admitted, kCap);
	EXPECT_EQ(refused, kAddrs * kPerAddr - kCap);
	auto st = srv.stats();
	EXPECT_EQ(st["conns_refused_peer"], uint64_t(kAddrs * kPerAddr - kCap));
	EXPECT_EQ(st["conns_refused"], st["conns_refused_peer"]);
	EXPECT_EQ(st["conns_active"], uint64_t(kCap));
	/* The slots the /64 could not take are there for everyone else. */
	EXPECT_LT(st["conns_active"], uint64_t(kMaxConns));

	/* Another /64 is another peer. */
	auto other = connect_from(srv.addr(), "fd00:33::1");
	ASSERT_TRUE(other) << "fd00:33::/64 was refused for fd00:32::/64's connections";
	EXPECT_TRUE(ping(other.get()));

	/* One of the /64's connections closes: the /64 may open one more. */
	held.front()->disconnect();
	held.erase(held.begin());
	std::unique_ptr<Requester> again;
	EXPECT_TRUE(eventually([&] {
		again = connect_from(srv.addr(), addr_in("fd00:32::", kAddrs));
		return again != nullptr;
	})) << "a closed connection's slot stayed counted against the /64";
	EXPECT_TRUE(again && ping(again.get()));
	EXPECT_FALSE(connect_from(srv.addr(), addr_in("fd00:32::", 1)))
	    << "the /64 went past its cap after a reconnect";
}

} // namespace
