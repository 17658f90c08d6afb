/* thrust::counting_iterator stand-in: what the CUB stand-ins read as values. */
#ifndef TDM_EMU_COUNTING_ITERATOR_H
#define TDM_EMU_COUNTING_ITERATOR_H
#include <stddef.h>
namespace thrust {
template <typename T>
class counting_iterator {
 public:
  typedef T value_type;
  explicit counting_iterator(T base) : base_(base) {}
  T operator[](ptrdiff_t i) const { return (T)(base_ + (T)i); }
  T operator*() const { return base_; }
  counting_iterator operator+(ptrdiff_t i) const { return counting_iterator((T)(base_ + (T)i)); }

 private:
  T base_;
};
}  // namespace thrust
#endif
