"""A game action, from the request's intent to COMMIT: the six files a newcomer reads to follow one.

- `game_action`: the entry points (an action, a deadline caught up, a beacon roll resolved) and their keyed
  transaction's loop;
- `action_transaction`: the transaction itself: the lock and the reads in one pipeline, the decision, the
  write and the stored answer with COMMIT, a refusal read from the dealer's table;
- `locked`: what the lock read (`LockedGame`) and what a decision is given (`Env`: the time, the ids, the
  randomness), with the reads a decision may ask for;
- `decision`: `decide(locked, intent, env) -> Decision`, pure, a closed set of outcomes;
- `rules_step`: one step of the rules (`pokna_verify.game`) applied to the locked game, as an immutable outcome;
- `answer`: the action's answer, from the final view.

What the action shares with creation, reads and the sweep (the write document and its call, the view, the
store's statements, beacon rolls) stays in `pokna.dealer`; docs/architecture.md walks the whole path."""
