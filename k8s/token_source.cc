// SPDX-License-Identifier: Apache-2.0
#include "k8s/token_source.h"

#include <sys/stat.h>

#include "k8s/file.h"
#include "src/base/strings.h"

namespace skb::k8s {

TokenSource::TokenSource(std::string token, std::string token_file,
                         std::shared_ptr<ExecCredentialSource> exec)
    : static_token_(std::move(token)), file_(std::move(token_file)), exec_(std::move(exec)) {}

void TokenSource::Unauthorized(const std::string& token) {
  if (exec_ != nullptr) exec_->Invalidate(token);
}

StatusOr<std::string> TokenSource::Token() {
  if (exec_ != nullptr) return exec_->Token();
  if (file_.empty()) return static_token_;
  std::lock_guard<std::mutex> lock(mu_);
  struct stat st {};
  const bool stat_ok = ::stat(file_.c_str(), &st) == 0;
  const bool changed = !stat_ok || st.st_mtim.tv_sec != mtime_.tv_sec ||
                       st.st_mtim.tv_nsec != mtime_.tv_nsec || st.st_size != size_;
  if (!changed && !cached_.empty()) return cached_;
  auto text = ReadSmallFile(file_, "bearer token file");
  if (!text.ok()) {
    if (!cached_.empty()) return cached_;
    return text.status();
  }
  std::string token(StripWhitespace(*text));
  if (token.empty()) {
    if (!cached_.empty()) return cached_;
    return FailedPreconditionError(StrCat("bearer token file ", file_, " is empty"));
  }
  cached_ = std::move(token);
  if (stat_ok) {
    mtime_ = st.st_mtim;
    size_ = st.st_size;
  }
  return cached_;
}

}  // namespace skb::k8s
