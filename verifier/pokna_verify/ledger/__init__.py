"""The ledger's export format and its offline check: the hash chain each line extends (`chain`), the
check of a whole export (`check`) or of a stream of lines (`scan`), the signed checkpoints
(`checkpoint_check`) and what a check reports (`findings`). Written by the service (`pokna.ledger`)."""
