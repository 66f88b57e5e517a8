# Homebrew formula for rlock, for a tap (see packaging/README.md):
#   brew install --build-from-source ./packaging/homebrew/rlock.rb
#
# Linux only: rlock is built on signalfd, timerfd, eventfd, CLOCK_BOOTTIME
# and PR_SET_CHILD_SUBREAPER, which macOS does not have.
class Rlock < Formula
  desc "Run a command while holding a lock in Redis: flock(1) for clusters"
  # PLACEHOLDER: the project's home page.
  homepage "https://example.invalid/rlock"
  # PLACEHOLDER: the release tarball (`make dist`, uploaded with the release)
  # and its checksum (`sha256sum rlock-0.1.0.tar.gz`).
  url "https://example.invalid/rlock/releases/download/v0.1.0/rlock-0.1.0.tar.gz"
  sha256 "0000000000000000000000000000000000000000000000000000000000000000"
  # PLACEHOLDER: the project has no license file yet; add `license "..."`
  # (an SPDX identifier) when it has one.

  depends_on "cli11" => :build
  depends_on "cmake" => :build
  depends_on "nlohmann-json" => :build
  depends_on "pkgconf" => :build
  depends_on "scdoc" => :build
  depends_on "hiredis"
  depends_on "openssl@3" # loaded with dlopen for rediss:// URLs
  depends_on :linux

  def install
    system "cmake", "-S", ".", "-B", "build",
                    "-DRLOCK_ENABLE_TESTING=OFF",
                    "-DRLOCK_STATIC_LIBSTDCXX=OFF",
                    "-DRLOCK_ZSH_COMPLETION_DIR=#{zsh_completion}",
                    "-DRLOCK_FISH_COMPLETION_DIR=#{fish_completion}",
                    *std_cmake_args
    system "cmake", "--build", "build"
    system "cmake", "--install", "build"
  end

  test do
    assert_match "rlock #{version}", shell_output("#{bin}/rlock --version")
    # Nothing listens on the port: exit 69, Redis unavailable.
    port = free_port
    output = shell_output("#{bin}/rlock --url redis://127.0.0.1:#{port}/0 -n smoke-test true 2>&1", 69)
    assert_match "cannot connect", output
  end
end
