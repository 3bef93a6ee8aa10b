"""The default prompt sections, one plugin module each: ``goclaw.section.<name>``.

| order | section | modes |
|---|---|---|
| 1 | identity | full, minimal |
| 1.5 | bootstrap (first-run override) | full, minimal (when BOOTSTRAP.md is pending) |
| 2 | tooling | full, minimal |
| 3 | safety | full, minimal |
| 4 | skills (``goclaw.skills``) | full |
| 5 | memory_recall (``goclaw.memory``) | full |
| 6 | workspace | full, minimal |
| 6.5 | sandbox | full, minimal (when the runtime sandboxes tools) |
| 7 | user_identity | full |
| 8 | current_time | full, minimal |
| 9 | messaging | full |
| 10 | extra_context | full, minimal (when there is an extra prompt) |
| 11 | project_context | full, minimal |
| 12 | silent_replies | full |
| 14 | subagent_spawning | full, minimal (when a spawn tool is offered) |
| 15 | runtime | full, minimal |
"""
