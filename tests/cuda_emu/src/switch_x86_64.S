/* tdm_emu_switch(void **save_sp, void *next_sp): saves the callee-saved
 * registers on the current stack, stores its pointer, and resumes the fiber
 * whose stack pointer is next_sp (System V x86-64). */
  .text
  .globl tdm_emu_switch
  .type tdm_emu_switch, @function
tdm_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size tdm_emu_switch, .-tdm_emu_switch
  .section .note.GNU-stack,"",@progbits
