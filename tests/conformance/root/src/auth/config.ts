export const config = {
  algorithm: "RS256",
  lifetimeHours: 24,
};
