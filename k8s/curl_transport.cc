// SPDX-License-Identifier: Apache-2.0
#include "k8s/curl_transport.h"

#include <curl/curl.h>

#include <cctype>
#include <chrono>

#include "k8s/logger.h"
#include "src/base/strings.h"

namespace skb::k8s {
namespace {

constexpr size_t kMaxIdleHandles = 8;
constexpr size_t kMaxErrorBodyBytes = 1u << 20;

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool HeaderIs(std::string_view line, std::string_view name) {
  if (line.size() <= name.size() || line[name.size()] != ':') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
  }
  return true;
}

Status CurlError(std::string_view what, CURLcode code, const char* errbuf) {
  std::string msg = StrCat(what, ": ", curl_easy_strerror(code));
  if (errbuf != nullptr && errbuf[0] != '\0') StrAppend(&msg, " (", errbuf, ")");
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return DeadlineExceededError(std::move(msg));
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CIPHER:
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return FailedPreconditionError(std::move(msg));
    case CURLE_OUT_OF_MEMORY:
      return ResourceExhaustedError(std::move(msg));
    default:
      return UnavailableError(std::move(msg));
  }
}

void SetBlob(CURL* easy, CURLoption option, const std::string& data) {
  curl_blob blob{const_cast<char*>(data.data()), data.size(), CURL_BLOB_COPY};
  curl_easy_setopt(easy, option, &blob);
}

void LockShare(CURL*, curl_lock_data data, curl_lock_access, void* user) {
  auto* mus = static_cast<std::mutex*>(user);
  mus[static_cast<int>(data) % 4].lock();
}
void UnlockShare(CURL*, curl_lock_data data, void* user) {
  auto* mus = static_cast<std::mutex*>(user);
  mus[static_cast<int>(data) % 4].unlock();
}

}  // namespace

// State of one transfer, reachable from libcurl's callbacks.
struct CurlTransport::Transfer {
  CURL* easy = nullptr;
  const StreamSink* sink = nullptr;  // null: collect the body
  const std::atomic<bool>* cancel = nullptr;
  HttpResponse response;
  bool too_large = false;
  bool sink_stopped = false;
  bool cancelled = false;

  static size_t OnHeader(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view line(data, size * n);
    if (line.rfind("HTTP/", 0) == 0) t->response.retry_after.clear();  // a new response (1xx)
    if (HeaderIs(line, "retry-after")) {
      t->response.retry_after = std::string(StripWhitespace(line.substr(12)));
    }
    return size * n;
  }

  static size_t OnData(char* data, size_t size, size_t n, void* user) {
    auto* t = static_cast<Transfer*>(user);
    std::string_view chunk(data, size * n);
    if (t->sink != nullptr) {
      long code = 0;
      curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
      if (code >= 200 && code < 300) {
        if (!(*t->sink)(chunk)) {
          t->sink_stopped = true;
          return 0;  // aborts the transfer with CURLE_WRITE_ERROR
        }
        return chunk.size();
      }
      if (t->response.body.size() + chunk.size() > kMaxErrorBodyBytes) return chunk.size();
    } else if (t->response.body.size() + chunk.size() > kMaxResponseBytes) {
      t->too_large = true;
      return 0;
    }
    t->response.body.append(chunk);
    return chunk.size();
  }

  static int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* t = static_cast<Transfer*>(user);
    if (t->cancel != nullptr && t->cancel->load(std::memory_order_relaxed)) {
      t->cancelled = true;
      return 1;
    }
    return 0;
  }
};

StatusOr<std::unique_ptr<CurlTransport>> CurlTransport::Create(const RestConfig& config) {
  if (config.server.empty()) return FailedPreconditionError("rest config: no server");
  if (config.client_cert_pem.empty() != config.client_key_pem.empty()) {
    return FailedPreconditionError(
        "rest config: client certificate and key must be given together");
  }
  GlobalInit();
  std::unique_ptr<CurlTransport> t(new CurlTransport(config));
  if (!config.tls_server_name.empty()) {
    // Verify the certificate against tls_server_name while connecting to the real host:
    // the URL carries the TLS name and CONNECT_TO maps it to the server's address.
    std::string_view rest(config.server);
    rest.remove_prefix(rest.find("://") + 3);
    std::string_view host_port = rest.substr(0, rest.find('/'));
    size_t colon = host_port.rfind(':');
    std::string_view host = host_port;
    std::string port = config.server.rfind("https", 0) == 0 ? "443" : "80";
    if (colon != std::string_view::npos && host_port.find(']', colon) == std::string_view::npos) {
      host = host_port.substr(0, colon);
      port = std::string(host_port.substr(colon + 1));
    }
    t->connect_to_ = StrCat(config.tls_server_name, ":", port, ":", host, ":", port);
    t->url_base_ = StrCat(config.server.substr(0, config.server.find("://") + 3),
                          config.tls_server_name, ":", port);
  }
  Logger()->info("k8s_client_config {}", config.Describe());
  return t;
}

CurlTransport::CurlTransport(const RestConfig& config)
    : config_(config),
      url_base_(config.server),
      tokens_(config.bearer_token, config.bearer_token_file,
              config.exec ? ExecCredentialSource::ForConfig(*config.exec) : nullptr) {
  share_ = curl_share_init();
  if (share_ != nullptr) {
    curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, LockShare);
    curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, UnlockShare);
    curl_share_setopt(share_, CURLSHOPT_USERDATA, share_mu_);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  }
}

CurlTransport::~CurlTransport() {
  for (CURL* easy : idle_) curl_easy_cleanup(easy);
  if (share_ != nullptr) curl_share_cleanup(share_);
}

CURL* CurlTransport::Acquire() {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!idle_.empty()) {
      CURL* easy = idle_.back();
      idle_.pop_back();
      // Clears options; keeps the live connection and caches (libcurl's documented contract).
      curl_easy_reset(easy);
      return easy;
    }
  }
  return curl_easy_init();
}

void CurlTransport::Release(CURL* easy) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (idle_.size() < kMaxIdleHandles) {
    idle_.push_back(easy);
    return;
  }
  curl_easy_cleanup(easy);
}

StatusOr<HttpResponse> CurlTransport::Send(const HttpRequest& req) {
  return Perform(req, nullptr, nullptr);
}

StatusOr<HttpResponse> CurlTransport::Stream(const HttpRequest& req, const StreamSink& sink,
                                             const std::atomic<bool>* cancel) {
  return Perform(req, &sink, cancel);
}

StatusOr<HttpResponse> CurlTransport::Perform(const HttpRequest& req, const StreamSink* sink,
                                              const std::atomic<bool>* cancel) {
  const std::string what = StrCat(req.method, " ", req.path.substr(0, req.path.find('?')));
  ASSIGN_OR_RETURN(std::string token, tokens_.Token());
  CURL* easy = Acquire();
  if (easy == nullptr) return ResourceExhaustedError(StrCat(what, ": curl_easy_init failed"));

  Transfer t;
  t.easy = easy;
  t.sink = sink;
  t.cancel = cancel;
  char errbuf[CURL_ERROR_SIZE] = {0};

  const std::string url = StrCat(url_base_, req.path);
  curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
  curl_easy_setopt(easy, CURLOPT_SHARE, share_);
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_2TLS));
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "https,http");
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(config_.connect_timeout.count()));
  const auto timeout = req.timeout.count() > 0 ? req.timeout : config_.timeout;
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
  // Detect peers that vanished without closing (a killed apiserver host) on idle watches.
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, 30L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, 10L);
  curl_easy_setopt(easy, CURLOPT_USERAGENT, config_.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_ACCEPT_ENCODING, "");  // gzip if the server offers it

  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  } else {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 2L);
    if (!config_.ca_pem.empty()) SetBlob(easy, CURLOPT_CAINFO_BLOB, config_.ca_pem);
  }
  curl_slist* connect_to = nullptr;
  if (!connect_to_.empty()) {
    connect_to = curl_slist_append(connect_to, connect_to_.c_str());
    curl_easy_setopt(easy, CURLOPT_CONNECT_TO, connect_to);
  }
  if (!config_.client_cert_pem.empty()) {
    curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    SetBlob(easy, CURLOPT_SSLCERT_BLOB, config_.client_cert_pem);
    curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    SetBlob(easy, CURLOPT_SSLKEY_BLOB, config_.client_key_pem);
  }

  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!req.body.empty()) {
    headers = curl_slist_append(headers, StrCat("Content-Type: ", req.content_type).c_str());
  }
  if (!token.empty()) {
    headers = curl_slist_append(headers, StrCat("Authorization: Bearer ", token).c_str());
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);

  if (req.method == "GET") {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  if (!req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH") {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  }

  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Transfer::OnHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Transfer::OnData);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &t);
  if (cancel != nullptr) {
    curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &Transfer::OnProgress);
    curl_easy_setopt(easy, CURLOPT_XFERINFODATA, &t);
  }

  const auto start = std::chrono::steady_clock::now();
  CURLcode rc = curl_easy_perform(easy);
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &t.response.status);
  // Detach everything pointing into this frame before the handle goes back to the pool.
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(easy, CURLOPT_CONNECT_TO, nullptr);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  curl_slist_free_all(connect_to);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();

  Status error;
  if (t.cancelled) {
    error = CancelledError(StrCat(what, ": cancelled"));
  } else if (t.too_large) {
    error = ResourceExhaustedError(
        StrCat(what, ": response larger than ", kMaxResponseBytes, " bytes"));
  } else if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && t.sink_stopped)) {
    error = CurlError(what, rc, errbuf);
  }
  if (!error.ok()) {
    // A failed handle may hold a broken connection: do not reuse it.
    curl_easy_cleanup(easy);
    Logger()->debug("k8s_http_error request=\"{}\" ms={} error=\"{}\"", what, ms, error.message());
    return error;
  }
  Release(easy);
  if (t.response.status == 401 && !token.empty()) tokens_.Unauthorized(token);
  Logger()->trace("k8s_http request=\"{}\" code={} ms={}", what, t.response.status, ms);
  return std::move(t.response);
}

}  // namespace skb::k8s
