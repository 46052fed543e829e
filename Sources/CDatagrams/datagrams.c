#define _GNU_SOURCE
#include "datagrams.h"

#include <fcntl.h>
#include <stddef.h>
#include <unistd.h>
#include <sys/socket.h>

_Static_assert(sizeof(struct ncd_mmsghdr) == sizeof(struct mmsghdr), "ncd_mmsghdr is mmsghdr");
_Static_assert(offsetof(struct ncd_mmsghdr, msg_len) == offsetof(struct mmsghdr, msg_len), "ncd_mmsghdr.msg_len");

int ncd_recvmmsg(int fd, struct ncd_mmsghdr *msgs, unsigned int count, int flags)
{
	return recvmmsg(fd, (struct mmsghdr *)msgs, count, flags, NULL);
}

int ncd_sendmmsg(int fd, struct ncd_mmsghdr *msgs, unsigned int count, int flags)
{
	return sendmmsg(fd, (struct mmsghdr *)msgs, count, flags);
}

int ncd_wake_pipe(int fds[2])
{
	return pipe2(fds, O_CLOEXEC);
}
