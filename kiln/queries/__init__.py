"""Read-side statement builders (GitLab's finders): filters, sorting, counts, paging."""
