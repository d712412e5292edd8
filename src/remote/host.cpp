#include "remote/host.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>

namespace ok::remote {

using util::ErrorKind;
using util::fail;

std::string EvalHost::url() const {
  if (kind == Kind::kSlurm) return slurm_text.empty() ? "slurm" : "slurm:" + slurm_text;
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return fmt::format("ssh://{}{}{}", user.empty() ? "" : user + "@", h,
                     port ? fmt::format(":{}", *port) : "");
}

static bool name_chars(std::string_view s, std::string_view extra) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

util::Result<EvalHost> parse_eval_host(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return fail(
        ErrorKind::kUsage,
        fmt::format("the evaluation host '{}' (--eval-host, or eval_host in the config file): {} "
                    "(expected ssh://[user@]host[:port] or slurm[:ARGS])",
                    text, why));
  };
  if (text == "slurm" || text.starts_with("slurm:")) {
    EvalHost h;
    h.kind = EvalHost::Kind::kSlurm;
    h.slurm_text =
        std::string(text.substr(std::min(text.size(), std::string_view("slurm:").size())));
    auto words = split_words(h.slurm_text);
    if (!words) return bad("srun's arguments have an unclosed quote or a trailing backslash");
    h.srun_args = std::move(*words);
    return h;
  }
  constexpr std::string_view scheme = "ssh://";
  if (!text.starts_with(scheme)) return bad("only ssh:// hosts and slurm are supported");
  std::string_view rest = text.substr(scheme.size());
  if (rest.find_first_of("/?#") != std::string_view::npos)
    return bad("a host takes no path or query");
  EvalHost h;
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    h.user = std::string(rest.substr(0, at));
    rest = rest.substr(at + 1);
    if (!name_chars(h.user, "._-") || h.user.front() == '-') return bad("malformed user name");
  }
  std::string_view port;
  if (rest.starts_with("[")) {
    auto close = rest.find(']');
    if (close == std::string_view::npos) return bad("unclosed [ in an IPv6 address");
    h.host = std::string(rest.substr(1, close - 1));
    if (!name_chars(h.host, ":.")) return bad("malformed IPv6 address");
    rest = rest.substr(close + 1);
    if (!rest.empty() && !rest.starts_with(":")) return bad("text after the IPv6 address");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    auto colon = rest.find(':');
    h.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
    if (h.host.starts_with("-")) return bad("a host name cannot start with '-'");
    if (!name_chars(h.host, ".-_")) return bad(h.host.empty() ? "no host" : "malformed host name");
  }
  if (!port.empty() || (rest.ends_with(":") && !rest.starts_with("["))) {
    int p = 0;
    bool digits =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits) p = std::stoi(std::string(port));
    if (!digits || p < 1 || p > 65535) return bad("the port must be a number from 1 to 65535");
    h.port = p;
  }
  return h;
}

std::vector<std::string> without_gpu_requests(const std::vector<std::string>& args) {
  static const std::vector<std::string> gpu_options = {
      "--gpus",        "--gpus-per-node",  "--gpus-per-socket", "--gpus-per-task", "--cpus-per-gpu",
      "--mem-per-gpu", "--ntasks-per-gpu", "--gpu-bind",        "--gpu-freq"};
  // --gres=gpu:1,tmpfs:10G keeps tmpfs:10G; nothing left: the option goes.
  auto non_gpu_gres = [](std::string_view value) {
    std::string kept;
    size_t start = 0;
    while (start <= value.size()) {
      size_t end = std::min(value.find(',', start), value.size());
      std::string_view entry = value.substr(start, end - start);
      if (!entry.empty() && !entry.starts_with("gpu"))
        kept += (kept.empty() ? "" : ",") + std::string(entry);
      start = end + 1;
    }
    return kept;
  };
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string name = a.substr(0, a.find('='));
    const bool has_value = a.find('=') != std::string::npos;
    if (name == "--gres") {
      std::string value =
          has_value ? a.substr(a.find('=') + 1) : (i + 1 < args.size() ? args[++i] : "");
      if (auto kept = non_gpu_gres(value); !kept.empty()) out.push_back("--gres=" + kept);
    } else if (std::find(gpu_options.begin(), gpu_options.end(), name) != gpu_options.end()) {
      if (!has_value) ++i;  // its value is the next word
    } else if (a == "-G") {
      ++i;
    } else if (!a.starts_with("-G")) {  // -G2: the value attached
      out.push_back(a);
    }
  }
  return out;
}

std::optional<std::vector<std::string>> split_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) return std::nullopt;
      word += text.substr(i + 1, close - i - 1);
      i = close;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= text.size()) return std::nullopt;
        if (text[i] == '"') break;
        if (text[i] == '\\' && i + 1 < text.size() &&
            std::string_view("\\\"$`").find(text[i + 1]) != std::string_view::npos)
          ++i;
        word += text[i];
      }
    } else if (c == '\\') {
      if (++i >= text.size()) return std::nullopt;
      word += text[i];
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

}  // namespace ok::remote
