"""The stores: the only place SQL lives, every statement parameterised. What both databases
share stands here (the `Backend` they offer, the stores written once, the ranking they agree
on); what one of them does differently lives in its own folder, `sqlite/` or `postgres/`,
behind the backend's methods."""
