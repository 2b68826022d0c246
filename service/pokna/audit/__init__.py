"""The period report for regulators and operators (`pokna audit report`, docs/audit.md): RTP and RNG
figures over a bundle's games, with their significance. The bundle's check is pokna_verify.bundle."""
