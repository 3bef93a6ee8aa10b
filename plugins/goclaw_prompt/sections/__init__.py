"""The default prompt sections, one plugin module each: ``goclaw.section.<name>``.

| order | section | modes |
|---|---|---|
| 1 | identity | full, task, minimal |
| 1.5 | bootstrap (first-run override) | full, task, minimal (when BOOTSTRAP.md is pending) |
| 2 | tooling | full, task, minimal |
| 3 | safety | full, task, minimal |
| 4 | skills (``goclaw.skills``) | full, task |
| 5 | memory_recall (``goclaw.memory``) | full, task |
| 6 | workspace | full, task, minimal |
| 6.5 | sandbox | full, task, minimal (when the runtime sandboxes tools) |
| 7 | user_identity | full |
| 8 | current_time | full, task, minimal |
| 9 | messaging | full |
| 10 | extra_context | full, task, minimal (when there is an extra prompt) |
| 11 | project_context | full, task, minimal |
| 12 | silent_replies | full |
| 14 | subagent_spawning | full, task, minimal (when a spawn tool is offered) |
| 15 | runtime | full, task, minimal |
"""
