"""Understanding and repairing the data: profile, domain knowledge, repair, EDA."""
