// apps/hhg/io.hpp: fast line input and buffered output for the `hhg` tool.
//
// Input is read with read(2) in large blocks, so a file of 10^6 lines costs a few
// dozen system calls, yet a line that arrives on a pipe is handed out at once
// (replay can be driven interactively). Output is formatted by hand into a 1 MiB
// buffer (std::to_chars, no locale, no std::endl).
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hhg::cli {

/// Reads a text stream line by line and counts physical lines (1-based).
/// Removes a UTF-8 byte order mark at the start of the stream. A line of
/// max_line bytes or more (without its '\n') is an input error, so an input
/// without line ends (a binary file, /dev/zero) cannot fill the memory.
class line_reader {
 public:
  static constexpr std::size_t max_line = std::size_t{64} << 20;  // 64 MiB

  /// Opens `path`, or standard input when `path` is empty or "-".
  /// Throws input_error when the file cannot be opened.
  explicit line_reader(const std::string& path);
  ~line_reader();
  line_reader(const line_reader&) = delete;
  line_reader& operator=(const line_reader&) = delete;

  /// Next line without its '\n' (a trailing '\r' is kept; see strip_cr). The view
  /// is valid until the next call. False at the end of the stream. A last line
  /// without '\n' is returned too. Throws input_error on a read error and for
  /// a line that is too long (naming its number).
  bool next(std::string_view& line);

  /// Makes the next call of next() return the same line again (same number).
  void unread() noexcept { unread_ = true; }

  /// Physical number of the line last returned by next().
  std::size_t line_number() const noexcept { return line_number_; }

  /// True when the input is not a regular file (a pipe or a terminal): someone
  /// may be waiting for each answer.
  bool interactive() const noexcept { return interactive_; }

 private:
  bool fill();
  [[noreturn]] void too_long() const;
  int fd_ = -1;
  bool owns_fd_ = false;
  bool eof_ = false;
  bool unread_ = false;
  bool interactive_ = false;
  std::string name_;
  std::vector<char> buf_;
  std::size_t begin_ = 0;  // start of unconsumed data in buf_
  std::size_t end_ = 0;    // end of valid data in buf_
  std::size_t line_number_ = 0;
  std::string_view last_;
};

/// Buffered writer to a stdio stream. flush() throws std::runtime_error when the
/// stream reports a write error (disk full, closed pipe).
class output {
 public:
  explicit output(std::FILE* f, std::size_t capacity = std::size_t{1} << 20);
  ~output();  // flushes, ignoring errors
  output(const output&) = delete;
  output& operator=(const output&) = delete;

  void put(std::string_view s) {
    if (s.size() > buf_.size() - used_) make_room(s.size());
    s.copy(buf_.data() + used_, s.size());
    used_ += s.size();
  }
  void put(char c) {
    if (used_ == buf_.size()) make_room(1);
    buf_[used_++] = c;
  }
  void put_uint(std::uint64_t v) {
    if (buf_.size() - used_ < 20) make_room(20);
    used_ =
        static_cast<std::size_t>(std::to_chars(buf_.data() + used_, buf_.data() + buf_.size(), v).ptr - buf_.data());
  }
  /// Writes "a b\n".
  void put_pair(std::uint64_t a, std::uint64_t b) {
    if (buf_.size() - used_ < 42) make_room(42);
    char* p = buf_.data() + used_;
    char* const e = buf_.data() + buf_.size();
    p = std::to_chars(p, e, a).ptr;
    *p++ = ' ';
    p = std::to_chars(p, e, b).ptr;
    *p++ = '\n';
    used_ = static_cast<std::size_t>(p - buf_.data());
  }

  /// Hands the buffer to the stream and flushes the stream.
  void flush();

 private:
  void make_room(std::size_t n);
  std::FILE* f_;
  std::vector<char> buf_;
  std::size_t used_ = 0;
};

}  // namespace hhg::cli
