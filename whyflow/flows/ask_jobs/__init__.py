"""Family 2's jobs: `whyflow ask`, its engines, its flow body and its job folder."""
