// SPDX-License-Identifier: Apache-2.0
#include "k8s/file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "src/base/strings.h"

namespace skb::k8s {

StatusOr<std::string> ReadSmallFile(const std::string& path, const std::string& what,
                                    size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    std::string msg = StrCat(what, " ", path, ": ", std::strerror(err));
    return err == ENOENT ? NotFoundError(msg) : FailedPreconditionError(msg);
  }
  if (S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(StrCat(what, " ", path, ": is a directory"));
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    return InvalidArgumentError(
        StrCat(what, " ", path, ": ", st.st_size, " bytes, larger than the limit of ", max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return FailedPreconditionError(
        StrCat(what, " ", path, ": cannot open: ", std::strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return FailedPreconditionError(StrCat(what, " ", path, ": read error"));
  return ss.str();
}

}  // namespace skb::k8s
