"""Domain logic: owns the transaction, asks the policy, writes rows and repositories."""
