// SPDX-License-Identifier: MIT
/*
 * Socket addresses and GIDs for the CM (pure helpers, no I/O): ports,
 * wildcard, lengths, and the IPv4-mapped / IPv6 GID of an address and
 * back (RoCEv2 GIDs, IBTA A17.8).
 */
#include <arpa/inet.h>
#include <string.h>

#include "cm_priv.h"

uint16_t cm__sa_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return 0;
}

void cm__sa_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
	else if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
}

bool cm__sa_is_any(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	if (sa->sa_family == AF_INET)
		return ((const struct sockaddr_in *)sa)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	return true;
}

bool cm__sa_is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >>
			24) == 127;
	return false;
}

socklen_t cm__sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					 : sizeof(struct sockaddr_in);
}

void cm__gid_from_sa(union ibv_gid *gid, const struct sockaddr *sa)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		       16);
	} else {
		gid->raw[10] = gid->raw[11] = 0xff;
		memcpy(gid->raw + 12,
		       &((const struct sockaddr_in *)sa)->sin_addr, 4);
	}
}

void cm__sa_from_gid(struct sockaddr_storage *ss, const union ibv_gid *gid)
{
	static const uint8_t v4pfx[12] = { [10] = 0xff, [11] = 0xff };

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(gid->raw, v4pfx, 12)) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, gid->raw + 12, 4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, gid->raw, 16);
	}
}
