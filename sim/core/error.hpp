#pragma once
// Errors the user can fix: bad scenario files, platforms or command lines.
// The message is complete and printable as is ("file:line:col: key.path: what is wrong").
#include <stdexcept>
#include <string>

namespace aggsim {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace aggsim
