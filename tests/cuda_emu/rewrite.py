#!/usr/bin/env python3
"""Rewrites one CUDA source or header for the emulated device (build time,
into the build folder; the source itself is never changed):
  k<<<g, b, s, st>>>(args)   ->  tdm_emu_launch("k", __FILE__, __LINE__, tdm_emu::cfg(g, b, s, st), k, args)
  __shared__ T name[N];      ->  per-block storage of the emulator
  *(volatile T *)e           ->  (*tdm_emu::at_volatile((volatile T *)(e)))   (a seeded switch point)
Line numbers are kept (a #line names the original file), so diagnostics and
coverage point at the source.  usage: rewrite.py IN OUT"""
import re
import sys

VOLATILE = re.compile(r'\*\s*\(\s*((?:const\s+)?volatile\s+(?:const\s+)?[A-Za-z_][\w:]*(?:\s+[A-Za-z_][\w:]*)*\s*\*)\s*\)')

SHARED = re.compile(r'__shared__\s+([^;{}]*?)\s*\b([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*);')


def kernel_start(src, end):
    """Start index of the kernel expression that ends just before end."""
    i = end
    while i > 0 and src[i - 1].isspace():
        i -= 1
    if src[i - 1] == '>':
        depth = 0
        while i > 0:
            i -= 1
            c = src[i]
            if c == '>':
                depth += 1
            elif c == '<':
                depth -= 1
                if depth == 0:
                    break
    while i > 0 and (src[i - 1].isalnum() or src[i - 1] in '_:'):
        i -= 1
    return i


def matching_paren(src, i):
    assert src[i] == '('
    depth = 0
    for j in range(i, len(src)):
        if src[j] == '(':
            depth += 1
        elif src[j] == ')':
            depth -= 1
            if depth == 0:
                return j
    raise SystemExit('rewrite.py: unbalanced launch arguments')


def rewrite_launches(src):
    out = []
    pos = 0
    while True:
        at = src.find('<<<', pos)
        if at < 0:
            out.append(src[pos:])
            return ''.join(out)
        ks = kernel_start(src, at)
        kexpr = src[ks:at].strip()
        ce = src.find('>>>', at)
        cfg = src[at + 3:ce]
        p = ce + 3
        while src[p].isspace():
            p += 1
        pe = matching_paren(src, p)
        # NULL forwarded through the launch helper would lose its null-pointer meaning
        args = re.sub(r'\bNULL\b', 'nullptr', src[p + 1:pe])
        name = ' '.join(kexpr.split())
        out.append(src[pos:ks])
        out.append('tdm_emu_launch("%s", __FILE__, __LINE__, tdm_emu::cfg(%s), %s%s%s)' %
                   (name, cfg, kexpr, ', ' if args.strip() else '', args))
        # keep the line count of what was between the kernel and its arguments
        out.append('\n' * src[at:p].count('\n'))
        pos = pe + 1


def rewrite_shared(src):
    n = [0]

    def one(m):
        n[0] += 1
        site = 'tdm_emu_site_%d' % n[0]
        return ('static const char %s = 0; auto &%s = tdm_emu::shared_var<%s %s>(&%s);' %
                (site, m.group(2), m.group(1), m.group(3).strip(), site))
    return SHARED.sub(one, src)


def operand_end(src, i):
    """End of the unary expression the cast at i applies to: prefix & or *,
    a name, then [..], (..), .name and ->name."""
    while i < len(src) and src[i].isspace():
        i += 1
    while src[i] in '&*':
        i += 1
    if src[i] == '(':
        return closing(src, i) + 1
    m = re.compile(r'[A-Za-z_][\w:]*').match(src, i)
    if not m:
        raise SystemExit('rewrite.py: cannot parse the operand of a volatile cast at %r' % src[i:i + 40])
    i = m.end()
    while True:
        if src.startswith('->', i) or src[i] == '.':
            i = re.compile(r'(?:->|\.)\s*[A-Za-z_]\w*').match(src, i).end()
        elif src[i] in '[(':
            i = closing(src, i) + 1
        else:
            return i


def closing(src, i):
    pair = {'(': ')', '[': ']'}[src[i]]
    depth = 0
    for j in range(i, len(src)):
        if src[j] == src[i]:
            depth += 1
        elif src[j] == pair:
            depth -= 1
            if depth == 0:
                return j
    raise SystemExit('rewrite.py: unbalanced %s' % src[i])


def rewrite_volatile(src):
    out = []
    pos = 0
    for m in VOLATILE.finditer(src):
        if m.start() < pos:
            continue
        end = operand_end(src, m.end())
        out.append(src[pos:m.start()])
        out.append('(*tdm_emu::at_volatile((%s)(%s)))' % (m.group(1), src[m.end():end].strip()))
        pos = end
    out.append(src[pos:])
    return ''.join(out)


def main():
    src = open(sys.argv[1]).read()
    body = rewrite_volatile(rewrite_shared(rewrite_launches(src)))
    with open(sys.argv[2], 'w') as f:
        f.write('#line 1 "%s"\n' % sys.argv[1])
        f.write(body)


main()
