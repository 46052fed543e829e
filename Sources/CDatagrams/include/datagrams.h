// recvmmsg(2), sendmmsg(2) and pipe2(2) for Swift. glibc declares them, and struct mmsghdr, only under
// _GNU_SOURCE, which a Swift module cannot set for <sys/socket.h>; the wrappers are compiled with
// it (datagrams.c), over a struct laid out as mmsghdr (checked there).
#ifndef NEARCAST_DATAGRAMS_H
#define NEARCAST_DATAGRAMS_H

#include <sys/socket.h>

struct ncd_mmsghdr {
	struct msghdr msg_hdr;
	unsigned int msg_len;
};

// recvmmsg(2) with no timeout: the number of datagrams received, or -1 with errno.
int ncd_recvmmsg(int fd, struct ncd_mmsghdr *msgs, unsigned int count, int flags);

// sendmmsg(2): the number of datagrams sent (fewer than `count` when the next one failed), or -1
// with errno when the first one failed.
int ncd_sendmmsg(int fd, struct ncd_mmsghdr *msgs, unsigned int count, int flags);

// pipe2(2) with O_CLOEXEC: a pipe whose write end wakes a thread that polls its read end.
int ncd_wake_pipe(int fds[2]);

#endif
