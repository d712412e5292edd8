// Remote evaluation's pure parts and the Worker's transport contract (docs/remote.md): the
// --eval-host value, the shell text sent over ssh, and Worker::call through a Transport (files
// rewritten both ways, one retry on a fresh worker when the channel closes, then kRemoteLost)
// against scripted workers. The real ssh path: tests/integration/test_remote_ssh.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "eval/worker.hpp"
#include "remote/host.hpp"
#include "remote/package.hpp"
#include "remote/slurm_worker.hpp"
#include "remote/ssh_worker.hpp"
#include "remote/transport.hpp"
#include "util/paths.hpp"
#include "util/subprocess.hpp"

using nlohmann::json;
using ok::util::ErrorKind;
namespace remote = ok::remote;
namespace eval = ok::eval;

TEST(EvalHost, ParsesUserHostAndPort) {
  auto h = remote::parse_eval_host("ssh://alice@gpu-1.example.org:2222");
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->user, "alice");
  EXPECT_EQ(h->host, "gpu-1.example.org");
  EXPECT_EQ(h->port, 2222);
  EXPECT_EQ(h->url(), "ssh://alice@gpu-1.example.org:2222");
  auto plain = remote::parse_eval_host("ssh://gpu1");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->user, "");
  EXPECT_FALSE(plain->port);
  auto v6 = remote::parse_eval_host("ssh://[::1]:22");
  ASSERT_TRUE(v6) << v6.error().message;
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->url(), "ssh://[::1]:22");
}

TEST(EvalHost, RefusesMalformedValuesSayingWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {"gpu1", "only ssh://"},
      {"http://gpu1", "only ssh://"},
      {"slurm:--comment='x", "unclosed quote"},
      {"slurm:a\\", "trailing backslash"},
      {"ssh://", "no host"},
      {"ssh://-oProxyCommand=touch", "cannot start with '-'"},
      {"ssh://gpu1:0", "1 to 65535"},
      {"ssh://gpu1:70000", "1 to 65535"},
      {"ssh://gpu1:", "1 to 65535"},
      {"ssh://gpu1:22x", "1 to 65535"},
      {"ssh://gpu1/path", "no path"},
      {"ssh://a b@gpu1", "user name"},
      {"ssh://-x@gpu1", "user name"},
      {"ssh://gpu;rm", "malformed host"},
      {"ssh://[::1", "unclosed"},
      {"ssh://[::1]x", "after the IPv6"},
  };
  for (const auto& [text, says] : cases) {
    auto h = remote::parse_eval_host(text);
    ASSERT_FALSE(h) << text;
    EXPECT_EQ(h.error().kind, ErrorKind::kUsage) << text;
    EXPECT_NE(h.error().message.find(says), std::string::npos) << text << ": " << h.error().message;
  }
}

TEST(EvalHost, ParsesSlurmWithItsSrunArguments) {
  auto bare = remote::parse_eval_host("slurm");
  ASSERT_TRUE(bare) << bare.error().message;
  EXPECT_EQ(bare->kind, remote::EvalHost::Kind::kSlurm);
  EXPECT_TRUE(bare->srun_args.empty());
  EXPECT_EQ(bare->url(), "slurm");
  auto h = remote::parse_eval_host("slurm:-p gpu --gres=gpu:1  --comment='a b' -J\"x\\\"y\"");
  ASSERT_TRUE(h) << h.error().message;
  EXPECT_EQ(h->srun_args,
            (std::vector<std::string>{"-p", "gpu", "--gres=gpu:1", "--comment=a b", "-Jx\"y"}));
  EXPECT_EQ(h->url(), "slurm:-p gpu --gres=gpu:1  --comment='a b' -J\"x\\\"y\"");
}

TEST(EvalHost, SplitsWordsAsAShellWouldWithoutExpanding) {
  const std::pair<const char*, std::vector<std::string>> cases[] = {
      {"", {}},
      {"  a\tb  c ", {"a", "b", "c"}},
      {"'$HOME `id`'", {"$HOME `id`"}},
      {"\"a\\$b\\c\"", {"a$b\\c"}},
      {"a\\ b", {"a b"}},
      {"''", {""}},
      {"x'y'\"z\"", {"xyz"}},
  };
  for (const auto& [text, words] : cases) {
    auto got = remote::split_words(text);
    ASSERT_TRUE(got) << text;
    EXPECT_EQ(*got, words) << text;
    // The same words as sh itself gives (printf one per line).
    std::string expect;
    for (const auto& w : words) expect += "[" + w + "]\n";
    auto sh = ok::util::run_capture({"sh", "-c", std::string("printf '[%s]\\n' ") + text},
                                    std::chrono::seconds(10), false);
    ASSERT_TRUE(sh);
    if (!words.empty()) {
      EXPECT_EQ(sh->output, expect) << text;
    }
  }
  for (const char* bad : {"'a", "\"a", "a\\", "\"a\\\""})
    EXPECT_FALSE(remote::split_words(bad)) << bad;
}

TEST(RemoteSlurm, SrunArgvPutsTheUsersArgumentsFirstAndOnlyOneTask) {
  auto h = remote::parse_eval_host("slurm:--partition=gpu --ntasks=4");
  ASSERT_TRUE(h);
  remote::RemoteWorkerOptions o;
  o.host = *h;
  o.python = "/opt/py/bin/python3";
  o.env_set = {{"CUDA_VISIBLE_DEVICES", "1"}};
  auto argv = remote::srun_argv(o, "0123456789abcdef", "openkernel-worker-1-1-abc");
  auto at = [&](const std::string& a) {
    return std::find(argv.begin(), argv.end(), a) - argv.begin();
  };
  EXPECT_LT(at("--partition=gpu"), at("--ntasks=1"));
  EXPECT_LT(at("--ntasks=4"), at("--ntasks=1"));  // srun takes the last
  EXPECT_LT(at("--job-name=openkernel-worker-1-1-abc"), at("/opt/py/bin/python3"));
  EXPECT_LT(at("--unbuffered"), at("/opt/py/bin/python3"));
  ASSERT_LT(at("0123456789abcdef"), static_cast<long>(argv.size()));
  EXPECT_EQ(argv[at("0123456789abcdef") - 1].find("import"), 0u);  // -c BOOTSTRAP HASH
  EXPECT_LT(at("OPENKERNEL_WORKER_WATCHDOG=1"), static_cast<long>(argv.size()));
  EXPECT_EQ(argv.back(), "CUDA_VISIBLE_DEVICES=1");
}

TEST(RemoteTransport, StagesUnderNamesTheWorkerAccepts) {
  using T = remote::StagedTransport;
  EXPECT_EQ(T::staged_name("/p/19_ReLU.py"), "19_ReLU.py");
  EXPECT_EQ(T::staged_name("/p/my kernel (v2).py"), "my_kernel__v2_.py");
  EXPECT_EQ(T::staged_name("/p/-rf.py"), "_-rf.py");
  EXPECT_EQ(T::staged_name("/p/k\u00e9.cu"), "k__.cu");
  EXPECT_EQ(T::staged_name("/p/" + std::string(300, 'a')).size(), 200u);
}

TEST(RemoteShell, StopCommandStopsOnlyAWorker) {
  auto start = [](const std::string& tag) {
    ok::util::SpawnOptions so;
    so.argv = {"/usr/bin/python3", "-c", "import time; time.sleep(120)", tag};
    auto p = ok::util::Subprocess::spawn(so);
    EXPECT_TRUE(p);
    return std::move(*p);
  };
  auto worker = start("openkernel_worker");
  auto other = start("something_else");
  for (auto* p : {&worker, &other}) {
    // What ssh hands to the host's login shell, handed to a local one.
    auto r = ok::util::run_capture({"sh", "-c", remote::remote_stop_command(p->pid())},
                                   std::chrono::seconds(10));
    ASSERT_TRUE(r);
  }
  EXPECT_TRUE(worker.try_wait() ||
              (std::this_thread::sleep_for(std::chrono::milliseconds(300)), worker.try_wait()));
  EXPECT_FALSE(other.try_wait());
}

// A worker whose SIGTERM cleanup never ends: after the grace its candidates (one in a process
// group of its own, one in the worker's) go with it.
TEST(RemoteShell, StopCommandKillsWhatAStuckWorkerStarted) {
  ok::util::SpawnOptions so;
  so.argv = {"/usr/bin/python3", "-c",
             "import signal, subprocess, time\n"
             "signal.signal(signal.SIGTERM, lambda *a: None)\n"
             "a = subprocess.Popen(['sleep', '120'], start_new_session=True)\n"
             "b = subprocess.Popen(['sleep', '120'])\n"
             "print(a.pid, b.pid, flush=True)\n"
             "time.sleep(120)\n",
             "openkernel_worker"};
  auto worker = ok::util::Subprocess::spawn(so);
  ASSERT_TRUE(worker);
  auto line = worker->read_line(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(line);
  long a = 0, b = 0;
  ASSERT_EQ(std::sscanf(line->c_str(), "%ld %ld", &a, &b), 2);
  auto r = ok::util::run_capture({"sh", "-c", remote::remote_stop_command(worker->pid(), 1)},
                                 std::chrono::seconds(20));
  ASSERT_TRUE(r);
  auto gone = [](long pid) {  // absent, or a zombie nobody has reaped yet
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    auto close = text.rfind(')');
    return close == std::string::npos || text.substr(close + 2, 1) == "Z";
  };
  for (int i = 0; i < 40 && !(gone(a) && gone(b)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(gone(a));
  EXPECT_TRUE(gone(b));
  EXPECT_TRUE(worker->try_wait() ||
              (std::this_thread::sleep_for(std::chrono::milliseconds(300)), worker->try_wait()));
}

TEST(RemoteSlurm, BuildWorkerAsksForNoGpu) {
  using V = std::vector<std::string>;
  EXPECT_EQ(remote::without_gpu_requests(V{"--partition=gpu", "--gres=gpu:1", "--time=30"}),
            (V{"--partition=gpu", "--time=30"}));
  EXPECT_EQ(remote::without_gpu_requests(V{"--gres", "gpu:a100:2,tmpfs:10G", "-N1"}),
            (V{"--gres=tmpfs:10G", "-N1"}));
  EXPECT_EQ(remote::without_gpu_requests(V{"-G", "2", "-G1", "--gpus=1", "--gpus-per-task", "1",
                                           "--cpus-per-gpu=4", "--mem-per-gpu=8G",
                                           "--gpu-bind=closest", "--comment=gpu job", "-p", "gpu"}),
            (V{"--comment=gpu job", "-p", "gpu"}));
}

TEST(RemoteShell, QuotingSurvivesASh) {
  for (std::string s : {"plain", "it's", "$HOME `id` \"q\" \\ ;|&", "", "a\nb"}) {
    auto out = ok::util::run_capture({"sh", "-c", "printf %s " + remote::shell_quote(s)},
                                     std::chrono::seconds(10), false);
    ASSERT_TRUE(out);
    EXPECT_EQ(out->output, s.empty() ? "" : s + "\n") << s;  // run_capture ends each line
  }
}

TEST(RemoteShell, SshArgvEndsOptionsBeforeTheHost) {
  remote::EvalHost h{"bob", "gpu1", 2200};
  auto argv = remote::ssh_argv(h, "true");
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[argv.size() - 3], "--");
  EXPECT_EQ(argv[argv.size() - 2], "gpu1");
  EXPECT_EQ(argv.back(), "true");
  auto has = [&](const std::string& a, const std::string& b) {
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == a && argv[i + 1] == b) return true;
    return false;
  };
  EXPECT_TRUE(has("-o", "BatchMode=yes"));
  EXPECT_TRUE(has("-p", "2200"));
  EXPECT_TRUE(has("-l", "bob"));
}

TEST(RemotePackage, HashesTheWorkerAndItsOpTable) {
  auto p = remote::worker_package(OPENKERNEL_TEST_SOURCE_ROOT);
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_EQ(p->hash.size(), 16u);
  auto has = [&](const std::string& f) {
    return std::find(p->files.begin(), p->files.end(), f) != p->files.end();
  };
  EXPECT_TRUE(has("python/openkernel_worker/__main__.py"));
  EXPECT_TRUE(has("python/openkernel_worker/stage.py"));
  EXPECT_TRUE(has("data/skills/elementwise_ops.json"));
  for (const auto& f : p->files) EXPECT_EQ(f.find("__pycache__"), std::string::npos) << f;
  auto again = remote::worker_package(OPENKERNEL_TEST_SOURCE_ROOT);
  EXPECT_EQ(again->hash, p->hash);
  // The launch runs only the shipped copy of this hash, and says so when it is missing.
  remote::SshWorkerOptions o;
  o.python = "/opt/py thon/bin/python3";
  o.env_set = {{"CUDA_VISIBLE_DEVICES", ""}};
  std::string cmd = remote::remote_launch_command(o, p->hash);
  EXPECT_NE(cmd.find("worker-" + p->hash), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("exit 97"), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("CUDA_VISIBLE_DEVICES="), std::string::npos) << cmd;
}

namespace {

// A scripted worker: greets with `protocol`, then per request either dies or echoes it.
eval::Launch scripted(const std::string& behaviour, int protocol = eval::kProtocolVersion) {
  const std::string script = R"(
import json, sys
behaviour, protocol = sys.argv[1], int(sys.argv[2])
print(json.dumps({"type": "hello", "ok": True, "protocol": protocol}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if behaviour == "die" and req.get("op") == "evaluate":
        sys.exit(9)
    print(json.dumps({"id": req["id"], "ok": True,
                      "result": {"op": req["op"], "candidate": req.get("candidate"),
                                 "message": "read " + str(req.get("candidate")),
                                 "worker_wall_s": 0.0}}), flush=True)
)";
  return {{"/usr/bin/python3", "-c", script, behaviour, std::to_string(protocol)},
          {},
          {},
          "scripted worker"};
}

struct FakeTransport : eval::Transport {
  std::vector<std::string>* log;  // what happened, in order
  std::vector<std::string> next;  // behaviours of the workers reconnect() starts
  std::string describe() const override { return "ssh://fake"; }
  ok::util::Result<json> outgoing(eval::Worker& direct, json request) override {
    auto staged = direct.call_direct({{"op", "stage"}}, std::chrono::seconds(10));
    if (!staged) return staged;
    log->push_back("staged");
    if (request.contains("candidate")) request["candidate"] = "/far/cand.py";
    return request;
  }
  void incoming(json& reply) override {
    if (reply.contains("candidate")) reply["candidate"] = "/here/cand.py";
    if (reply.contains("message")) reply["message"] = "read /here/cand.py";
  }
  void close(ok::util::Subprocess& channel) override {
    log->push_back(channel.pid() > 0 ? "close" : "close without a process");
  }
  ok::util::Result<eval::Worker> reconnect() override {
    log->push_back("reconnect");
    if (next.empty()) return ok::util::fail(ErrorKind::kEnvironment, "host down");
    auto b = next.front();
    next.erase(next.begin());
    return eval::Worker::connect(scripted(b), std::chrono::seconds(30));
  }
};

eval::Worker remote_worker(const std::string& first, std::vector<std::string> next,
                           std::vector<std::string>& log) {
  auto w = eval::Worker::connect(scripted(first), std::chrono::seconds(30));
  EXPECT_TRUE(w) << w.error().message;
  auto t = std::make_unique<FakeTransport>();
  t->log = &log;
  t->next = std::move(next);
  w->attach(std::move(t));
  return std::move(*w);
}

const json kEvaluate = {{"op", "evaluate"}, {"candidate", "/here/cand.py"}};

}  // namespace

TEST(WorkerTransport, RewritesBothWaysAndAccountsTheTransfer) {
  std::vector<std::string> log;
  auto w = remote_worker("serve", {}, log);
  auto r = w.call(kEvaluate, std::chrono::seconds(30));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)["candidate"], "/here/cand.py");
  EXPECT_EQ((*r)["message"], "read /here/cand.py");
  ASSERT_TRUE((*r)["phases_s"]["transfer"].is_number());
  EXPECT_GE((*r)["phases_s"]["transfer"].get<double>(), 0.0);
  EXPECT_EQ(log, std::vector<std::string>{"staged"});
}

TEST(WorkerTransport, RetriesOnceOnAFreshWorkerWhenTheChannelCloses) {
  std::vector<std::string> log;
  auto w = remote_worker("die", {"serve"}, log);
  auto r = w.call(kEvaluate, std::chrono::seconds(30));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)["candidate"], "/here/cand.py");
  EXPECT_EQ(log, (std::vector<std::string>{"staged", "reconnect", "staged"}));
  EXPECT_TRUE(w.call(kEvaluate, std::chrono::seconds(30)));  // the fresh worker stays
}

TEST(WorkerTransport, ClosesTheChannelOfAWorkerLetGo) {
  std::vector<std::string> log;
  { auto w = remote_worker("serve", {}, log); }
  EXPECT_EQ(log, std::vector<std::string>{"close"});
  log.clear();
  auto a = remote_worker("serve", {}, log);
  a = remote_worker("serve", {}, log);  // the first one's channel closed, the second kept
  EXPECT_EQ(log, std::vector<std::string>{"close"});
  EXPECT_TRUE(a.call(kEvaluate, std::chrono::seconds(30)));
}

TEST(WorkerTransport, ASecondLossIsRemoteLost) {
  std::vector<std::string> log;
  auto w = remote_worker("die", {"die"}, log);
  auto r = w.call(kEvaluate, std::chrono::seconds(30));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kRemoteLost);
  EXPECT_NE(r.error().message.find("lost the evaluation worker on ssh://fake twice"),
            std::string::npos)
      << r.error().message;
  EXPECT_EQ(ok::util::exit_code(r.error()), 3);
}

TEST(WorkerTransport, AHostThatCannotBeReachedAgainIsRemoteLost) {
  std::vector<std::string> log;
  auto w = remote_worker("die", {}, log);
  auto r = w.call(kEvaluate, std::chrono::seconds(30));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::kRemoteLost);
  EXPECT_NE(r.error().message.find("host down"), std::string::npos) << r.error().message;
}

TEST(WorkerConnect, RefusesAnotherProtocolVersion) {
  auto w = eval::Worker::connect(scripted("serve", eval::kProtocolVersion + 1),
                                 std::chrono::seconds(30));
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().kind, ErrorKind::kInternal);
  const std::string says = "the worker speaks protocol " +
                           std::to_string(eval::kProtocolVersion + 1) +
                           ", this openkernel speaks " + std::to_string(eval::kProtocolVersion);
  EXPECT_NE(w.error().message.find(says), std::string::npos) << w.error().message;
}

// A worker let go before its successor starts (optimize's restart): its transport closes the
// channel once, there and then (srun's allocation released), and nothing reconnects through it.
TEST(WorkerTransport, StopClosesTheChannelOnceAndNeverReconnects) {
  std::vector<std::string> log;
  {
    auto w = remote_worker("serve", {"serve"}, log);
    w.stop();
    EXPECT_EQ(log, (std::vector<std::string>{"close"}));
    EXPECT_FALSE(w.alive());
    auto r = w.call(kEvaluate, std::chrono::seconds(30));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind, ErrorKind::kInternal);
  }
  EXPECT_EQ(log, (std::vector<std::string>{"close"}));  // not again when it is destroyed
}
