// SPDX-License-Identifier: MIT
/*
 * The per-peer cap's key (rr_admit.c, rr_peer_key): the first
 * Peer_Prefix_V4 bits of an IPv4 address (v4-mapped, so a dual-stack
 * listener counts a peer once) or Peer_Prefix_V6 bits of an IPv6 one. The
 * soft fabric's peers are loopback only, which has one IPv6 address: the
 * /64 rule is checked here, on the function the connect path uses.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <string>

extern "C" bool rr_peer_key(const struct sockaddr_storage *ss, unsigned int prefix_v4,
			    unsigned int prefix_v6, uint8_t ip[16]);

namespace {

std::string key(const char *addr, unsigned int v4 = 32, unsigned int v6 = 64)
{
	sockaddr_storage ss;
	uint8_t ip[16];

	memset(&ss, 0, sizeof(ss));
	if (strchr(addr, ':')) {
		auto *s6 = reinterpret_cast<sockaddr_in6 *>(&ss);
		s6->sin6_family = AF_INET6;
		EXPECT_EQ(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1) << addr;
	} else {
		auto *s4 = reinterpret_cast<sockaddr_in *>(&ss);
		s4->sin_family = AF_INET;
		EXPECT_EQ(inet_pton(AF_INET, addr, &s4->sin_addr), 1) << addr;
	}
	if (!rr_peer_key(&ss, v4, v6, ip))
		return "none";
	return std::string(reinterpret_cast<char *>(ip), 16);
}

TEST(PeerKey, Ipv6AddressesOfOneSlash64AreOnePeer)
{
	/* 16 addresses of one /64: one peer by default */
	for (int i = 1; i <= 16; i++) {
		std::string a = "2001:db8:1:2:" + std::to_string(i) + "::" + std::to_string(i);
		EXPECT_EQ(key(a.c_str()), key("2001:db8:1:2::1")) << a;
	}
	EXPECT_NE(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
	/* 128: the address alone; 56: a /56 is one peer */
	EXPECT_NE(key("2001:db8:1:2::1", 32, 128), key("2001:db8:1:2::2", 32, 128));
	EXPECT_EQ(key("2001:db8:1:2::1", 32, 56), key("2001:db8:1:ff::1", 32, 56));
	EXPECT_NE(key("2001:db8:1:2::1", 32, 56), key("2001:db8:1:100::1", 32, 56));
	/* a prefix that is not a whole number of bytes */
	EXPECT_EQ(key("2001:db8:1:2::1", 32, 63), key("2001:db8:1:3::1", 32, 63));
	EXPECT_NE(key("2001:db8:1:2::1", 32, 63), key("2001:db8:1:4::1", 32, 63));
}

TEST(PeerKey, Ipv4ByAddressByDefaultAndByPrefixWhenSet)
{
	EXPECT_NE(key("192.0.2.1"), key("192.0.2.2"));
	EXPECT_EQ(key("192.0.2.1", 24), key("192.0.2.200", 24));
	EXPECT_NE(key("192.0.2.1", 24), key("192.0.3.1", 24));
	/* the IPv6 prefix never applies to an IPv4 peer, on either listener */
	EXPECT_EQ(key("::ffff:192.0.2.1"), key("192.0.2.1"));
	EXPECT_NE(key("::ffff:192.0.2.1"), key("::ffff:192.0.2.2"));
	EXPECT_EQ(key("::ffff:192.0.2.1", 24), key("192.0.2.9", 24));
	/* 0: every address of the family one peer */
	EXPECT_EQ(key("192.0.2.1", 0), key("198.51.100.7", 0));
	EXPECT_NE(key("192.0.2.1", 0), key("2001:db8::1", 0, 0));
	EXPECT_EQ(key("2001:db8::1", 32, 0), key("fe80::1", 32, 0));
}

} // namespace
