"""Authentication: who is calling. What they may do is kiln.policy's business."""
