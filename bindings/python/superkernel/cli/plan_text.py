"""The plan of sk_superkernel_explain as a table, for `sk explain` and `sk run`."""


def _units_on(step):
    """The units a step's blocks run on ("2-3"), and "*" where the caller pinned them."""
    first, units = step.get("first_unit", 0), step.get("units", 1)
    text = f"{first}" if units == 1 else f"{first}-{first + units - 1}"
    return text + ("*" if step.get("placement") == "pinned" else "")


def _waits_for(step):
    """Where a step waits for the one before it, or "block-local" where its edge needs no wait."""
    if step.get("edge") == "block-local":
        return "block-local"
    return str(step.get("wait_previous", "-"))


def _print_cuda_entry(entry, w):
    whole = entry.get("compiled") == "whole program"
    cap = (f" ({'compiled' if whole else 'linked'} with at most {entry['register_cap']})"
           if "register_cap" in entry else " (no cap)")
    if whole:
        cap += f", compiled as one program (linked: {entry.get('linked_registers', '?')})"
    w(f"cuda entry: {entry.get('arch', '?')}, {entry.get('threads', '?')} threads, "
      f"{entry.get('registers', '?')} registers{cap}, "
      f"{entry.get('stack_bytes', '?')} B stack, {entry.get('static_shared_bytes', '?')} B static and "
      f"{entry.get('dynamic_shared_bytes', '?')} B dynamic shared, {entry.get('blocks_per_sm', '?')} "
      f"block(s) per SM\n")
    if "why_linked" in entry:
        w(f"  linked, not one program: {entry['why_linked']}\n")
    if "arguments" in entry:
        w(f"  arguments: {entry.get('argument_bytes', '?')} B in the entry's "
          + ("kernel parameters\n" if entry["arguments"] == "parameters" else "device buffer (past the "
             "parameter space)\n"))
    loop = entry.get("step_loop")
    if loop:
        w(f"  step loop: {loop.get('block_barriers', '?')} block barriers, {loop.get('releases', '?')} "
          f"release(s), {loop.get('acquires', '?')} acquire fence(s) after {loop.get('polls', '?')} relaxed "
          f"poll(s), {loop.get('table_loads', '?')} step-table loads, {loop.get('full_fences', '?')} "
          f"cache-option fence(s); {loop.get('one_barrier_steps', '?')} step(s) end at one block barrier\n")
    for k in entry.get("sub_kernels", []):
        shared = k.get("dynamic_shared_bytes", 0)
        w(f"  {k.get('name')}: {k.get('threads', '?')} threads (from {k.get('threads_from', '?')})"
          + (f", {shared} B dynamic shared (from {k.get('dynamic_shared_from', '?')})" if shared else "")
          + (f", called as its copy {k['function']}" if k.get("function", k.get("name")) != k.get("name") else "")
          + f"; {k.get('module', '?')}\n")
        ptx = k.get("ptx")
        if ptx:
            for key, what in (("reqntid", ".reqntid"), ("maxntid", ".maxntid")):
                if key in ptx:
                    w(f"    {what} {', '.join(str(d) for d in ptx[key])}\n")
            for r in ptx.get("rewrites", []):
                w(f"    {r}\n")


def print_plan(plan, out, limit=None):
    w = out.write
    options = plan.get("options") or {}
    w(f"super kernel {plan.get('name')!r} on {plan.get('backend', '?')}: "
      f"{len(plan.get('steps', []))} sub-kernels, {plan.get('cores', '?')} cores "
      f"(device {plan.get('device_cores', '?')}), max block_dim {plan.get('max_block_dim', '?')}, "
      f"{plan.get('dispatches', '?')} dispatch(es)\n")
    if options:
        w("options: " + ", ".join(f"{k}={v}" for k, v in options.items()) + "\n")
    execution = plan.get("execution")  # the host device's account of how it runs the plan
    if execution:
        barrier = execution.get("barrier", "?")
        if barrier == "tree":
            barrier += (f" ({execution.get('barrier_groups', '?')} groups of up to "
                        f"{execution.get('barrier_group_cores', '?')} cores)")
        calls = ", ".join(f"{n} {kind}" for kind, n in (execution.get("calls") or {}).items() if n)
        w(f"execution: {barrier} barrier, {execution.get('step_loop', '?')} step loop, "
          f"complete at {execution.get('completes_at', '?')}, core 0 run by the "
          f"{execution.get('core0', '?')}, {execution.get('core_stack_kib', '?')} KiB core stacks"
          + (f"; kernels called: {calls}" if calls else "") + "\n")
    entry = plan.get("cuda_entry")  # the CUDA backend's linked entry and its sub-kernels
    if entry:
        _print_cuda_entry(entry, w)
    w(f"  {'#':>4} {'name':<22} {'kernel':<18} {'blocks':>6} {'cores':>5} {'on':>9}  "
      f"{'waits for':<22} {'device API'}\n")
    steps = plan.get("steps", [])
    for s in steps[:limit] if limit else steps:
        api = ", ".join([a for a in s.get("device_api", []) if a not in ("sk_block_idx", "sk_block_num")]
                        + s.get("constructs", [])) or "-"
        w(f"  {s.get('index', '?'):>4} {str(s.get('name'))[:22]:<22} "
          f"{str(s.get('symbol'))[:18]:<18} {s.get('block_dim', '?'):>6} {s.get('cores', '?'):>5} "
          f"{_units_on(s):>9}  "
          f"{_waits_for(s)[:22]:<22} {api}\n")
    if limit and len(steps) > limit:
        w(f"  ... {len(steps) - limit} more (sk explain --json for all)\n")
