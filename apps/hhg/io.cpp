// apps/hhg/io.cpp: line_reader over a file descriptor, buffered output.
#include "io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "parse.hpp"

namespace hhg::cli {

namespace {
constexpr std::size_t block_size = std::size_t{1} << 16;
}

line_reader::line_reader(const std::string& path) : buf_(block_size) {
  if (path.empty() || path == "-") {
    fd_ = STDIN_FILENO;
    name_ = "standard input";
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY);
    if (fd_ < 0) throw input_error("cannot open '" + path + "': " + std::strerror(errno));
    owns_fd_ = true;
    name_ = "'" + path + "'";
  }
  struct stat st {};
  if (::fstat(fd_, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      if (owns_fd_) ::close(fd_);
      throw input_error("cannot read " + name_ + ": it is a directory");
    }
    interactive_ = !S_ISREG(st.st_mode);
  }
}

line_reader::~line_reader() {
  if (owns_fd_) ::close(fd_);
}

bool line_reader::fill() {
  if (eof_) return false;
  // Keep the unconsumed tail; grow when a single line fills the whole buffer.
  if (begin_ > 0) {
    std::copy(buf_.begin() + static_cast<std::ptrdiff_t>(begin_), buf_.begin() + static_cast<std::ptrdiff_t>(end_),
              buf_.begin());
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buf_.size()) buf_.resize(buf_.size() * 2);
  while (true) {
    const ssize_t got = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (got > 0) {
      end_ += static_cast<std::size_t>(got);
      return true;
    }
    if (got == 0) {
      eof_ = true;
      return false;
    }
    if (errno != EINTR) throw input_error("cannot read " + name_ + ": " + std::strerror(errno));
  }
}

void line_reader::too_long() const {
  fail_at(line_number_ + 1, "line too long (64 MiB or more; is this a text file?)");
}

bool line_reader::next(std::string_view& line) {
  if (unread_) {
    unread_ = false;
    line = last_;
    return true;
  }
  std::size_t scanned = begin_;  // no newline in [begin_, scanned); fill() may move begin_ to 0
  while (true) {
    const char* const data = buf_.data();
    const void* nl = std::memchr(data + scanned, '\n', end_ - scanned);
    if (nl != nullptr) {
      const std::size_t pos = static_cast<std::size_t>(static_cast<const char*>(nl) - data);
      if (pos - begin_ >= max_line) too_long();
      line = std::string_view(data + begin_, pos - begin_);
      begin_ = pos + 1;
      break;
    }
    if (end_ - begin_ >= max_line) too_long();  // before the buffer grows further
    scanned = end_ - begin_;                    // offsets move when fill() compacts the buffer
    if (!fill()) {
      if (begin_ == end_) return false;
      line = std::string_view(buf_.data() + begin_, end_ - begin_);  // last line without '\n'
      begin_ = end_;
      break;
    }
  }
  ++line_number_;
  if (line_number_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);
  last_ = line;
  return true;
}

output::output(std::FILE* f, std::size_t capacity) : f_(f), buf_(std::max<std::size_t>(capacity, 64)) {}

output::~output() {
  try {
    flush();
  } catch (...) {  // NOLINT(bugprone-empty-catch): a destructor must not throw
  }
}

void output::make_room(std::size_t n) {
  flush();
  if (n > buf_.size()) buf_.resize(n);
}

void output::flush() {
  const std::size_t n = used_;
  used_ = 0;
  if ((n > 0 && std::fwrite(buf_.data(), 1, n, f_) != n) || std::fflush(f_) != 0)
    throw std::runtime_error(std::string("cannot write the output: ") + std::strerror(errno));
}

}  // namespace hhg::cli
